import type { PostgresJsDatabase, PostgresJsQueryResultHKT } from 'drizzle-orm/postgres-js';
import {
  DrizzleIdempotencyStore,
  type DrizzleIdempotencyStoreOptions,
} from '../DrizzleIdempotencyStore.js';

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
  options?: DrizzleIdempotencyStoreOptions,
): PostgresJsIdempotencyStore<TSchema> {
  return new DrizzleIdempotencyStore(db, options);
}
