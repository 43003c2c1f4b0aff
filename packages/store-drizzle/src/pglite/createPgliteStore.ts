import type { PgliteDatabase, PgliteQueryResultHKT } from 'drizzle-orm/pglite';
import {
  DrizzleIdempotencyStore,
  type DrizzleIdempotencyStoreOptions,
} from '../DrizzleIdempotencyStore.js';

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
  options?: DrizzleIdempotencyStoreOptions,
): PgliteIdempotencyStore<TSchema> {
  return new DrizzleIdempotencyStore(db, options);
}
