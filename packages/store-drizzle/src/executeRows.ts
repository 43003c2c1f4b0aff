import type { SQL } from 'drizzle-orm';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';

/** Anything the store runs statements on: the database, or a transaction of it. */
export type StatementRunner = Pick<PgDatabase<PgQueryResultHKT>, 'execute'>;

/**
 * How the store runs its raw statements: given the database (or, `inTransaction`, a transaction of
 * it), the runner to use. A driver folder supplies one where its driver runs statements better
 * than `execute()` (postgres.js: `postgres-js/preparedRunner.ts`); by default it is `runner` itself.
 */
export type StatementRunnerFactory = (
  runner: StatementRunner,
  inTransaction: boolean,
) => StatementRunner;

/**
 * Runs a raw statement and returns its rows, whatever the driver: `db.execute()` resolves to the
 * row array itself on postgres.js and to `{ rows }` on PGlite (and node-postgres).
 */
export async function executeRows<TRow>(runner: StatementRunner, query: SQL): Promise<TRow[]> {
  const result: unknown = await runner.execute(query);
  if (Array.isArray(result)) return result as TRow[];
  if (typeof result === 'object' && result !== null && 'rows' in result) {
    const { rows } = result;
    if (Array.isArray(rows)) return rows as TRow[];
  }
  throw new TypeError('db.execute() returned neither an array of rows nor { rows }');
}
