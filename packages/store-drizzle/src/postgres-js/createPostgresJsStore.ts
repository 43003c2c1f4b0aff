import type { PostgresJsDatabase, PostgresJsQueryResultHKT } from 'drizzle-orm/postgres-js';
import {
  DrizzleIdempotencyStore,
  type DrizzleIdempotencyStoreOptions,
} from '../DrizzleIdempotencyStore.js';
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
   * (PgBouncer before 1.21). Defaults to true.
   *
   * Behind such a pooler the postgres.js client itself must be opened with `prepare: false`:
   * postgres.js prepares its own `COMMIT`, and a missing prepared `COMMIT` is retried inside the
   * aborted transaction, where PostgreSQL runs it as a `ROLLBACK` and reports success. Find the
   * pooler at start-up with `detectTransactionPooler`. As a last resort, when a prepared
   * statement goes missing (SQLSTATE 26000), the store stops preparing for good, turns off its
   * postgres.js client's `prepare` option too, and says so once through {@link onWarning}; the
   * statement that met it fails (inside a transaction) or runs again unprepared (outside one).
   * The code is in `preparedRunner.ts`.
   */
  preparedStatements?: boolean;
  /**
   * Where the store reports a condition it worked around or found at start-up: prepared
   * statements turned off because a pooler could not carry them, and a postgres.js without the
   * outage fix. Defaults to `console.warn`.
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
    postgresJsOutageWarning = true,
    postgresJsPackageDir,
    ...storeOptions
  } = options;
  if (postgresJsOutageWarning) {
    warnOnceIfOutageUnfixed(
      onWarning ?? ((message) => console.warn(message)),
      postgresJsPackageDir,
    );
  }
  return new DrizzleIdempotencyStore(db, {
    ...storeOptions,
    statementRunner: preparedRunner(db, {
      ...(preparedStatements !== undefined ? { preparedStatements } : {}),
      ...(onWarning ? { onWarning } : {}),
    }),
  });
}
