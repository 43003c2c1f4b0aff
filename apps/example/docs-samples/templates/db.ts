// The database and store sample of docs/trpc-templates.md, verbatim between the markers, with
// the declarations it assumes.
declare function env(): { DATABASE_URL: string };

// ---- verbatim from docs/trpc-templates.md: 4. Database and store ----
// src/server/db.ts (create-t3-turbo: packages/db/src/client.ts)
import { createPostgresJsStore } from '@idem/store-drizzle/postgres-js';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';

const cache = globalThis as unknown as { nextExampleSql?: ReturnType<typeof postgres> };
const sql = (cache.nextExampleSql ??= postgres(env().DATABASE_URL, {
  max: 10,
  onnotice: () => {},
}));

export const db = drizzle(sql);
export const store = createPostgresJsStore(db);
// ---- end ----
