import { fillPlaceholders, type SQL } from 'drizzle-orm';
import type {
  DrizzleRunner,
  StatementRunner,
  StatementRunnerFactory,
} from '../drizzle/executeRows.js';
import type { StatementTemplate } from '../drizzle/statementTemplate.js';
import { hasSqlState } from '../drizzle/hasSqlState.js';
import { bounded, DEFAULT_STATEMENT_TIMEOUT_MS } from '../drizzle/statementBound.js';
import { closed, passGate, type Gate } from './poolerCheck.js';

/** Options of {@link preparedRunner}: the statement part of `PostgresJsStoreOptions`. */
export interface PreparedRunnerOptions {
  /** See `PostgresJsStoreOptions.preparedStatements`. Defaults to true. */
  preparedStatements?: boolean;
  /** See `PostgresJsStoreOptions.onWarning`. Defaults to `console.warn`. */
  onWarning?: (message: string) => void;
  /** See `PostgresJsStoreOptions.statementTimeoutMs` (checked by the caller). Defaults to 10 s. */
  statementTimeoutMs?: number;
  /**
   * The start-up check every statement passes first (`poolerCheck.ts`), looked up per call.
   * Defaults to none.
   */
  gate?: () => Gate;
}

/** SQLSTATE 26000 `invalid_sql_statement_name`: a prepared statement this session lacks. */
const INVALID_SQL_STATEMENT_NAME = '26000';

/** A postgres.js query: a promise that runs when awaited (or `execute()`d), and cancellable. */
interface PostgresJsQuery extends Promise<unknown> {
  execute(): unknown;
  cancel(): unknown;
}

/** The parts of a Drizzle postgres.js database (or transaction) the runner sends statements on. */
interface ClientSession {
  session: {
    client: {
      unsafe(query: string, params: unknown[], options: { prepare: boolean }): PostgresJsQuery;
    };
    logger?: { logQuery(query: string, params: unknown[]): void };
  };
  dialect: { sqlToQuery(query: SQL): { sql: string; params: unknown[] } };
}

/** `runner` as the postgres.js session it is, or null when it is not one. */
function clientSession(runner: unknown): ClientSession | null {
  const r = runner as Partial<ClientSession>;
  return typeof r.session?.client?.unsafe === 'function' &&
    typeof r.dialect?.sqlToQuery === 'function'
    ? (r as ClientSession)
    : null;
}

/**
 * Sends one statement on the session's postgres.js client, as Drizzle's postgres.js session
 * does (`client.unsafe`, logged through the session's Drizzle logger), but keeping the query
 * object, so that the bound can cancel it: `query.cancel()` takes a statement still waiting for
 * a connection out of the queue, and sends PostgreSQL a cancel request for one running (through
 * PgBouncer, which forwards it to the server connection). The call rejects at the bound whatever
 * the cancel achieves, so a connection that never answers (a protocol desync) holds no request.
 * `prepare` makes postgres.js use a server-side prepared statement, cached per connection by
 * its text: PostgreSQL parses and plans the store's long statements once per connection
 * (measured: the claim statement 1.9 ms unprepared, 0.4 ms prepared).
 */
function send(
  { session }: ClientSession,
  text: string,
  params: unknown[],
  prepare: boolean,
  ms: number,
  what: string,
): { query: PostgresJsQuery; answer: Promise<unknown> } {
  session.logger?.logQuery(text, params);
  const query = session.client.unsafe(text, params, { prepare });
  const answer = bounded(query, ms, what, () => void query.cancel());
  query.catch(() => {}); // after the bound, its own answer is nobody's
  return { query, answer };
}

/**
 * The postgres.js statement runner of the store: the only code that reaches Drizzle's session
 * (`session.client`, `session.logger`, `dialect`) and the postgres.js client's options.
 * Every statement passes the start-up check first (`poolerCheck.ts`), has the bound
 * `statementTimeoutMs`, and runs prepared unless `preparedStatements: false`. When a prepared
 * statement goes missing anyway (SQLSTATE 26000, a pooler the check could not see), it stops
 * preparing for good, turns off the client's `prepare` too, warns once, and runs the statement
 * again unprepared outside a transaction (inside one it fails: the transaction is aborted).
 */
export function preparedRunner(
  db: unknown,
  options: PreparedRunnerOptions = {},
): StatementRunnerFactory {
  let prepare = options.preparedStatements ?? true;
  const ms = options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS;
  const gate = options.gate;
  const onWarning = options.onWarning ?? ((message: string) => console.warn(message));

  const stopPreparing = () => {
    prepare = false;
    // The client's own statements must stop preparing too: postgres.js prepares its COMMIT,
    // and when a pooler hands the transaction another server connection, the missing
    // statement fails, aborts the transaction, and postgres.js's retry of it runs as a
    // ROLLBACK that reports success: a committed-looking transaction silently lost.
    // postgres.js reads `options.prepare` for every query it builds.
    const client = (db as { $client?: { options?: { prepare?: unknown } } }).$client;
    if (client?.options && client.options.prepare === true) client.options.prepare = false;
    onWarning(
      'idem: a prepared statement was missing on its connection (SQLSTATE 26000): the ' +
        'database is reached through a pooler in transaction mode, which cannot carry ' +
        'prepared statements. The store, and its postgres.js client, no longer prepare ' +
        'statements. Transactions that ran before this point may have been lost (a missing ' +
        'prepared COMMIT is retried by postgres.js as a silent ROLLBACK). Open the client ' +
        'with prepare: false (or detect the pooler at start-up: detectTransactionPooler).',
    );
  };

  const onSendLastFailure = (error: unknown) => {
    if (hasSqlState(error, INVALID_SQL_STATEMENT_NAME) && prepare) stopPreparing();
  };

  return (runner, inTransaction) => {
    const target = clientSession(runner);
    /** Runs `text` with `params`, prepared unless turned off; a missing one stops preparing. */
    const run = async (text: string, params: unknown[], what: string): Promise<unknown> => {
      if (gate && closed(gate())) await passGate(gate());
      if (target === null) return bounded(fallback(runner, text, params), ms, what);
      const prepared = prepare;
      try {
        return await send(target, text, params, prepared, ms, what).answer;
      } catch (error) {
        if (!prepared || !hasSqlState(error, INVALID_SQL_STATEMENT_NAME)) throw error;
        if (prepare) stopPreparing();
        // Nothing ran (the statement was missing); outside a transaction it can simply run again.
        if (inTransaction) throw error;
        return send(target, text, params, false, ms, what).answer;
      }
    };
    const statements: StatementRunner = {
      execute: (query) => {
        if (target === null) return bounded(runner.execute(query), ms, 'a store statement');
        const { sql: text, params } = target.dialect.sqlToQuery(query);
        return run(text, params, 'a store statement');
      },
      run: (template, values) =>
        run(template.query.sql, fillPlaceholders(template.query.params, values), template.name),
    };
    // Set rather than spread from a conditional literal (once per transaction, so once per
    // fresh request: measured, this factory 1.0 → 0.35 µs a request in the CPU profile).
    if (inTransaction && target !== null) {
      statements.sendLast = sendLastOn(target, ms, () => prepare, onSendLastFailure);
    }
    return statements;
  };
}

/** A runner that is not a postgres.js session (never the store's own): Drizzle's `execute`. */
function fallback(runner: DrizzleRunner, text: string, params: unknown[]): Promise<unknown> {
  return runner._.session
    .prepareQuery({ sql: text, params }, undefined, undefined, false)
    .execute();
}

/**
 * `sendLast` on postgres.js: the statement goes straight to the transaction's client, which
 * queues it on the transaction's connection before `execute()` returns, so before the callback
 * that sends it returns and before postgres.js creates the COMMIT. Both are written in one go
 * (postgres.js flushes what it queued on `setImmediate`): one round trip, no wait of a turn of
 * the event loop to stay ahead of the COMMIT, and none of Drizzle's per-call objects. Bounded
 * like every statement; a missing prepared statement stops preparing (inside the transaction
 * it fails rather than running again: the transaction is aborted).
 */
function sendLastOn(
  target: ClientSession,
  ms: number,
  prepare: () => boolean,
  onFailure: (error: unknown) => void,
): NonNullable<StatementRunner['sendLast']> {
  return (template: StatementTemplate, values) => {
    const params = fillPlaceholders(template.query.params, values);
    const { query, answer } = send(
      target,
      template.query.sql,
      params,
      prepare(),
      ms,
      template.name,
    );
    query.execute();
    const result = answer.then(undefined, (error: unknown) => {
      onFailure(error);
      throw error;
    });
    result.catch(() => {}); // the caller reads it after the transaction settles
    return result;
  };
}
