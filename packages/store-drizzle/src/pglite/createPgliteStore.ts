import type { PgliteDatabase, PgliteQueryResultHKT } from 'drizzle-orm/pglite';
import {
  DrizzleIdempotencyStore,
  type DrizzleIdempotencyStoreOptions,
} from '../DrizzleIdempotencyStore.js';
import { pglitePreparedRunner } from './preparedRunner.js';

/** Options of {@link createPgliteStore}: the store's, and how PGlite runs its statements. */
export interface PgliteStoreOptions extends Omit<
  DrizzleIdempotencyStoreOptions,
  'statementRunner'
> {
  /**
   * Run the store's hot-path statements (a request's read of its key, the record written with
   * its outcome) as named prepared statements, so PostgreSQL parses and plans each once per
   * PGlite instance and then only binds and executes it: without, PGlite parses and plans every
   * statement it runs. Defaults to true.
   *
   * The statements stay in the PGlite session (see them in `pg_prepared_statements`, named
   * `idem_…`); an application that drops them (`DEALLOCATE ALL`, `DISCARD ALL`) costs the next
   * call a new Parse outside a transaction, and fails the statement that meets the gap inside
   * one (PostgreSQL aborts that transaction; the next call prepares again). Turn it off to keep
   * the session free of them, or for a PGlite-compatible client that is not PGlite itself (one
   * without PGlite's `execProtocol` and session mutexes runs unprepared anyway). The code is in
   * `pglite/preparedRunner.ts`.
   */
  preparedStatements?: boolean;
}

/** The store on a PGlite database; its transactions are `db.transaction`'s. */
export type PgliteIdempotencyStore<
  TSchema extends Record<string, unknown> = Record<string, never>,
> = DrizzleIdempotencyStore<PgliteQueryResultHKT, TSchema>;

/**
 * The idempotency key store on a Drizzle PGlite database (`drizzle(new PGlite())`), the embedded
 * default. PGlite runs one transaction at a time: requests queue behind an open transaction, and
 * code inside `store.transaction(fn)` must use the `tx` it is given, never the outer `db` (that
 * waits for the transaction it is in, forever).
 */
export function createPgliteStore<TSchema extends Record<string, unknown> = Record<string, never>>(
  db: PgliteDatabase<TSchema>,
  options: PgliteStoreOptions = {},
): PgliteIdempotencyStore<TSchema> {
  const { preparedStatements, ...storeOptions } = options;
  return new DrizzleIdempotencyStore(db, {
    ...storeOptions,
    statementRunner: pglitePreparedRunner(db, {
      ...(preparedStatements !== undefined ? { preparedStatements } : {}),
    }),
  });
}
