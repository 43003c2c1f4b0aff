// The migrations sample of docs/trpc-templates.md, verbatim between the markers, with the
// declarations it assumes.
declare function env(): { DATABASE_URL: string };

// ---- verbatim from docs/trpc-templates.md: 3. Migrations ----
// scripts/migrate.ts: `pnpm migrate` (create-t3-turbo: packages/db, next to `push`)
import { migrate as migrateIdem } from '@idem/store-drizzle/postgres-js';
import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate as migrateApp } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';

const sql = postgres(env().DATABASE_URL, { max: 1, onnotice: () => {} });
try {
  const db = drizzle(sql);
  await migrateIdem(db);
  await migrateApp(db, { migrationsFolder: 'migrations' });
} finally {
  await sql.end({ timeout: 5 });
}
// ---- end ----
