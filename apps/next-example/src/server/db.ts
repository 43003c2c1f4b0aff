import { createPostgresJsStore } from '@idem/store-drizzle/postgres-js';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { env } from '../env';

/**
 * One client per server process, kept on `globalThis` so that `next dev`'s reloads of this module
 * do not open a new pool each time. postgres.js connects at the first query: importing this file
 * (as `next build` does) opens no connection.
 */
const cache = globalThis as unknown as { nextExampleSql?: ReturnType<typeof postgres> };
const sql = (cache.nextExampleSql ??= postgres(env().DATABASE_URL, {
  max: 10,
  onnotice: () => {},
}));

export const db = drizzle(sql);
/** idem's key store, on the same database: a post and its key commit in one transaction. */
export const store = createPostgresJsStore(db);
