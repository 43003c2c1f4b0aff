import type { NodePgDatabase, NodePgQueryResultHKT } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import {
  DrizzleIdempotencyStore,
  type DrizzleIdempotencyStoreOptions,
} from '../DrizzleIdempotencyStore.js';
import { statementTimeout } from '../drizzle/statementBound.js';
import { boundedRunner } from './boundedStatements.js';
import { warnOnConsole, watch } from './connectionErrors.js';
import { partsOf, poolTransaction } from './poolTransaction.js';

/**
 * Options of {@link createNodePostgresStore}: the store's, and where it reports connections lost.
 *
 * There is no prepared-statement option: every statement goes through Drizzle's node-postgres
 * session unnamed, and pg prepares a statement server-side only when it is given a name. So the
 * store runs as it is behind a pooler in transaction mode (Supabase's, PgBouncer with
 * `pool_mode = transaction`), which cannot carry named prepared statements, and needs no
 * fallback for a prepared statement gone missing.
 */
export interface NodePostgresStoreOptions extends Omit<
  DrizzleIdempotencyStoreOptions,
  'statementRunner'
> {
  /**
   * Where the store reports a connection of the pool that died (the database restarted or went
   * away): once per distinct failure (its error code, else its message) until a connection
   * opens again. The store listens for those failures on the pool and on every client the pool
   * hands out, so that they do not end the process (see `connectionErrors.ts`). Defaults to
   * `console.warn`.
   */
  onWarning?: (message: string) => void;
  /**
   * Milliseconds each statement of the store may take, its transactions' BEGIN and COMMIT (or
   * ROLLBACK) included, waiting for a client of the pool included: past it the call rejects
   * with a `StatementTimeoutError` (SQLSTATE 57014), which idem answers with the store's 503
   * and `Retry-After`, as for an outage, and the client is given up: a cancel request for its
   * statement (pg's `Client#cancel`, forwarded by PgBouncer), then its socket destroyed, and the
   * pool drops it (`boundedStatements.ts`). A client-side timer, so it holds where
   * `statement_timeout` cannot be set (poolers reject or ignore start-up parameters, and a
   * `SET` in transaction mode leaks to other clients), and where the server never answers.
   * Keep it above the longest `lockTimeoutMs` of your procedures: a claim waiting that long
   * behind another request's claim is cut otherwise (503 instead of 409). An integer from 1 to
   * 2^31 - 1, else a RangeError at start-up. Defaults to 10 000 (10 s: five times the default
   * `lockTimeoutMs`, under the 30 to 60 s after which gateways give up).
   */
  statementTimeoutMs?: number;
}

/** The store on a node-postgres database; its transactions are `db.transaction`'s. */
export type NodePostgresIdempotencyStore<
  TSchema extends Record<string, unknown> = Record<string, never>,
> = DrizzleIdempotencyStore<NodePgQueryResultHKT, TSchema>;

/**
 * The idempotency key store on a Drizzle node-postgres database over a pg `Pool`
 * (`drizzle(new Pool({ connectionString }))`, or `drizzle({ connection })`). Give the pool
 * enough connections (`max`, 10 by default) for the requests you run at once: a statement
 * outside a transaction takes one for its duration; a transaction holds one from BEGIN to
 * COMMIT.
 *
 * pg does not pipeline: the outcome recorded at commit (`commitWithRecord`) is awaited before
 * the COMMIT is sent, so a fresh request costs one round trip more than on postgres.js, which
 * sends the record and the COMMIT in one write.
 *
 * The store's transactions check their client out of the pool and give it back whatever
 * fails, a failed BEGIN included (`poolTransaction.ts`: Drizzle's own `db.transaction` keeps the
 * client of a failed BEGIN for good).
 *
 * A single pg `Client` is refused (a type error, and a TypeError at run time): Drizzle would run
 * every request's transaction on its one connection, interleaved.
 */
export function createNodePostgresStore<
  TSchema extends Record<string, unknown> = Record<string, never>,
>(
  db: NodePgDatabase<TSchema> & { $client: pg.Pool },
  options: NodePostgresStoreOptions = {},
): NodePostgresIdempotencyStore<TSchema> {
  const { onWarning, statementTimeoutMs, ...storeOptions } = options;
  const ms = statementTimeout(statementTimeoutMs);
  const pool: unknown = db.$client;
  if (!(pool instanceof pg.Pool)) {
    throw new TypeError(
      'createNodePostgresStore needs a Drizzle database over a pg Pool: ' +
        'drizzle(new Pool({ connectionString })). A single Client runs every transaction on one connection.',
    );
  }
  watch(pool, onWarning ?? warnOnConsole);
  // The store's transactions release their client whatever fails (see poolTransaction.ts).
  const plain = db as NodePgDatabase<Record<string, unknown>>;
  const transaction = poolTransaction(plain, pool, ms);
  const storeDb = Object.create(db, { transaction: { value: transaction } }) as typeof db;
  return new DrizzleIdempotencyStore(storeDb, {
    ...storeOptions,
    statementRunner: boundedRunner(pool, partsOf(plain), ms),
  });
}
