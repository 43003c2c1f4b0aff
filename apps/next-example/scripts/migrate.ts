/**
 * `pnpm migrate`: idem's tables (in idem's own journal, `drizzle.__idem_migrations`), then the
 * app's (Drizzle's default journal). Run it before `next start`, as a deploy step: the app's module
 * graph never migrates, so neither `next build` nor a cold start touches the schema.
 */
import { fileURLToPath } from 'node:url';
import { migrate as migrateIdem } from '@idem/store-drizzle/postgres-js';
import { drizzle } from 'drizzle-orm/postgres-js';
import { migrate as migrateApp } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import { env } from '../src/env';

const sql = postgres(env().DATABASE_URL, { max: 1, onnotice: () => {} });
try {
  const db = drizzle(sql);
  await migrateIdem(db);
  await migrateApp(db, {
    migrationsFolder: fileURLToPath(new URL('../migrations', import.meta.url)),
  });
} finally {
  await sql.end({ timeout: 5 });
}
