import type { SQL } from 'drizzle-orm';
import type { StatementTemplate } from './statementTemplate.js';

/**
 * What the store runs statements on: a Drizzle Postgres database, or a transaction of it (the
 * parts used: `execute`, and the session's `prepareQuery`, which `_` exposes).
 */
export interface DrizzleRunner {
  execute(query: SQL): PromiseLike<unknown>;
  _: {
    session: {
      prepareQuery(
        query: { sql: string; params: unknown[] },
        fields: undefined,
        name: string | undefined,
        isResponseInArrayMode: boolean,
      ): { execute(values?: Record<string, unknown>): Promise<unknown> };
    };
  };
}

/** How the store runs its statements on one database or transaction (see the factory below). */
export interface StatementRunner {
  /** Runs a statement built per call. */
  execute(query: SQL): Promise<unknown>;
  /** Runs a statement rendered once (statementTemplate.ts) with the values of this call. */
  run(template: StatementTemplate, values: Record<string, unknown>): Promise<unknown>;
  /**
   * Sends `template` as the transaction's last statement without waiting for its answer: by the
   * time it returns, the statement is queued on the transaction's connection, ahead of the
   * COMMIT the transaction sends when its callback returns, so both go out in one write and cost
   * one round trip. The promise settles with the statement's answer (nothing reads it before the
   * transaction settles: an unread rejection is not reported). Absent when the driver cannot
   * pipeline: the store then awaits the statement before the COMMIT.
   */
  sendLast?(template: StatementTemplate, values: Record<string, unknown>): Promise<unknown>;
}

/**
 * How the store runs its statements: given the database (or, `inTransaction`, a transaction of
 * it), the runner to use. A driver folder supplies one where its driver runs statements better
 * than Drizzle's defaults (postgres.js: `postgres-js/preparedRunner.ts`); by default it is
 * {@link drizzleRunner}.
 */
export type StatementRunnerFactory = (
  runner: DrizzleRunner,
  inTransaction: boolean,
) => StatementRunner;

/**
 * Runs a template through Drizzle's session without rendering SQL: `prepareQuery` with the
 * rendered text, `execute` with the call's values. `name` set makes postgres.js prepare the
 * statement server-side (once per connection, by its text).
 */
export function runTemplate(
  runner: DrizzleRunner,
  template: StatementTemplate,
  values: Record<string, unknown>,
  name?: string,
): Promise<unknown> {
  return runner._.session.prepareQuery(template.query, undefined, name, false).execute(values);
}

/** The default runner: Drizzle's `execute`, and templates through its session, unprepared. */
export const drizzleRunner: StatementRunnerFactory = (runner) => ({
  execute: async (query) => await runner.execute(query),
  run: (template, values) => runTemplate(runner, template, values),
});

/**
 * Runs a raw statement and returns its rows, whatever the driver: `db.execute()` resolves to the
 * row array itself on postgres.js and to `{ rows }` on PGlite (and node-postgres).
 */
export async function executeRows<TRow>(
  runner: { execute(query: SQL): PromiseLike<unknown> },
  query: SQL,
): Promise<TRow[]> {
  return rowsOf<TRow>(await runner.execute(query));
}

/** Runs a template and returns its rows (see {@link executeRows}). */
export async function templateRows<TRow>(
  runner: StatementRunner,
  template: StatementTemplate,
  values: Record<string, unknown>,
): Promise<TRow[]> {
  return rowsOf<TRow>(await runner.run(template, values));
}

/** The rows of a driver's result: the array itself (postgres.js) or its `rows` (PGlite). */
export function rowsOf<TRow>(result: unknown): TRow[] {
  if (Array.isArray(result)) return result as TRow[];
  if (typeof result === 'object' && result !== null && 'rows' in result) {
    const { rows } = result;
    if (Array.isArray(rows)) return rows as TRow[];
  }
  throw new TypeError('db.execute() returned neither an array of rows nor { rows }');
}
