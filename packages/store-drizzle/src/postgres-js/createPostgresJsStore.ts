import type { PostgresJsDatabase, PostgresJsQueryResultHKT } from 'drizzle-orm/postgres-js';
import {
  DrizzleIdempotencyStore,
  type DrizzleIdempotencyStoreOptions,
} from '../DrizzleIdempotencyStore.js';
import { boundedTransaction, statementTimeout } from '../drizzle/statementBound.js';
import { closed, passGate, poolerGate, type Gate } from './poolerCheck.js';
import { preparedRunner } from './preparedRunner.js';
import { warnOnceIfOutageUnfixed } from './postgresJsOutageFix.js';

/** Options of {@link createPostgresJsStore}: the store's, and how postgres.js runs its statements. */
export interface PostgresJsStoreOptions extends Omit<
  DrizzleIdempotencyStoreOptions,
  'statementRunner'
> {
  /**
   * Run the store's statements as server-side prepared statements, so PostgreSQL parses and
   * plans them once per connection: a claim costs about a quarter of the database time.
   * Turn it off behind a pooler in transaction mode that cannot carry prepared statements
   * (PgBouncer before 1.21). Defaults to true. A client opened with `prepare: false` prepares
   * nothing, whatever this says.
   *
   * Behind such a pooler the postgres.js client itself must be opened with `prepare: false`:
   * postgres.js prepares its own `COMMIT`, and a missing prepared `COMMIT` is retried inside the
   * aborted transaction, where PostgreSQL runs it as a `ROLLBACK` and reports success. The store
   * finds such a pooler before its first statement and refuses to run (see {@link poolerProbe});
   * `migrate` refuses to migrate. As a last resort, when a prepared
   * statement goes missing (SQLSTATE 26000), the store stops preparing for good, turns off its
   * postgres.js client's `prepare` option too, and says so once through {@link onWarning}; the
   * statement that met it fails (inside a transaction) or runs again unprepared (outside one).
   * The code is in `preparedRunner.ts`.
   */
  preparedStatements?: boolean;
  /**
   * Before the store's first statement, when its postgres.js client prepares statements (its
   * default), find out whether the client reaches PostgreSQL through a pooler in transaction
   * mode, and refuse to run if it does: every call of the store then rejects with an error
   * naming the two settings (the client's `prepare: false`, the store's
   * `preparedStatements: false`), said once through {@link onWarning}; with them the store runs
   * through such a pooler. The probe is `detectTransactionPooler`'s, on two connections of its
   * own opened with the client's settings, once per client (the stores on one client share
   * it), bounded by {@link statementTimeoutMs}: calls that arrive before it answers wait for it.
   * A client opened with `prepare: false` is not probed.
   *
   * What it cannot see: a pooler that hands each of the probe's two connections a server
   * connection of its own every time (a round-robin pool of exactly two idle server
   * connections) looks like a direct connection; a probe that times out (a session-mode
   * pooler with one server connection keeps the second waiting; prepared statements work there)
   * lets the store run. Both leave the last resort of {@link preparedStatements} and the bound
   * of {@link statementTimeoutMs}. Pass false to skip the probe where it cannot run or where you
   * know the database is reached directly. Defaults to true.
   */
  poolerProbe?: boolean;
  /**
   * Milliseconds each statement of the store may take, its transactions' BEGIN and COMMIT (or
   * ROLLBACK) included, waiting for a connection of the pool included: past it the store
   * cancels the statement (`query.cancel()`: a cancel request to PostgreSQL, forwarded by
   * PgBouncer) and the call rejects with a `StatementTimeoutError` (SQLSTATE 57014), which idem
   * answers with the store's 503 and `Retry-After`, as for an outage. A client-side timer, so it
   * holds where `statement_timeout` cannot be set (poolers reject or ignore start-up
   * parameters, and a `SET` in transaction mode leaks to other clients), and where the server
   * never answers at all. Keep it above the longest `lockTimeoutMs` of your procedures: a claim
   * waiting that long behind another request's claim is cut otherwise (503 instead of 409).
   * An integer from 1 to 2^31 - 1, else a RangeError at start-up. Defaults to 10 000 (10 s:
   * five times the default `lockTimeoutMs`, under the 30 to 60 s after which gateways give up).
   */
  statementTimeoutMs?: number;
  /**
   * Where the store reports a condition it worked around or found at start-up: prepared
   * statements behind a pooler in transaction mode (refused, or turned off as a last resort),
   * and a postgres.js without the outage fix. Defaults to `console.warn`.
   */
  onWarning?: (message: string) => void;
  /**
   * Warn once per process, through {@link onWarning}, when the installed postgres.js lacks the
   * outage fix: unfixed, a database outage can end the process with an unhandled rejection or an
   * uncaught TypeError. No released postgres.js carries it; `@idem/store-drizzle` ships the patch
   * in `patches/`. Pass false once you have acknowledged it. Defaults to true.
   */
  postgresJsOutageWarning?: boolean;
  /** @internal The postgres.js package the outage check reads; tests point it at a copy. */
  postgresJsPackageDir?: string;
}

/** The store on a postgres.js database; its transactions are `db.transaction`'s. */
export type PostgresJsIdempotencyStore<
  TSchema extends Record<string, unknown> = Record<string, never>,
> = DrizzleIdempotencyStore<PostgresJsQueryResultHKT, TSchema>;

/**
 * The idempotency key store on a Drizzle postgres.js database (`drizzle(postgres(url))`).
 * Give the pool enough connections for the requests you run at once: a claim outside a
 * transaction takes one for a statement; a local-mode request holds one for its transaction.
 */
export function createPostgresJsStore<
  TSchema extends Record<string, unknown> = Record<string, never>,
>(
  db: PostgresJsDatabase<TSchema>,
  options: PostgresJsStoreOptions = {},
): PostgresJsIdempotencyStore<TSchema> {
  const {
    preparedStatements,
    onWarning,
    poolerProbe = true,
    statementTimeoutMs,
    postgresJsOutageWarning = true,
    postgresJsPackageDir,
    ...storeOptions
  } = options;
  const ms = statementTimeout(statementTimeoutMs);
  const warn = onWarning ?? ((message: string) => console.warn(message));
  if (postgresJsOutageWarning) warnOnceIfOutageUnfixed(warn, postgresJsPackageDir);
  const client = (db as { $client?: unknown }).$client;
  const gate = poolerProbe ? () => poolerGate(client, ms, warn) : undefined;
  // The store's transactions pass the check first (BEGIN is a statement of the client), and
  // their BEGIN and COMMIT are bounded (postgres.js can cancel neither: the call is answered at
  // the bound, and the transaction's connection is left to postgres.js).
  const transaction = boundedTransaction(db.transaction.bind(db), ms);
  const checkedTransaction: typeof transaction = gate
    ? async (fn) => {
        const checked: Gate = gate();
        if (closed(checked)) await passGate(checked);
        return transaction(fn);
      }
    : transaction;
  const storeDb = Object.create(db, { transaction: { value: checkedTransaction } }) as typeof db;
  return new DrizzleIdempotencyStore(storeDb, {
    ...storeOptions,
    statementRunner: preparedRunner(db, {
      ...(preparedStatements !== undefined ? { preparedStatements } : {}),
      onWarning: warn,
      statementTimeoutMs: ms,
      ...(gate ? { gate } : {}),
    }),
  });
}
