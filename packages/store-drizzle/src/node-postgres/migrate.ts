import { sql } from 'drizzle-orm';
import { readMigrationFiles } from 'drizzle-orm/migrator';
import type { NodePgDatabase } from 'drizzle-orm/node-postgres';
import { migrate as drizzleMigrate } from 'drizzle-orm/node-postgres/migrator';
import { executeRows } from '../drizzle/executeRows.js';
import { idemMigrationConfig } from '../migrationConfig.js';

/**
 * Creates or upgrades idem's tables with the migrations shipped in this package, journaled in
 * `drizzle.__idem_migrations` (never the application's own journal). Running it again is a
 * no-op. Run it once at deploy or start-up, before the first request.
 *
 * Quiet on a database that is up to date: it reads the journal first and returns when nothing is
 * pending, so Drizzle's `create ... if not exists` statements (and the "already exists,
 * skipping" notices they raise, which a pool's `notice` listener would see) run only when there
 * is something to migrate.
 */
export async function migrate<TSchema extends Record<string, unknown>>(
  db: NodePgDatabase<TSchema>,
): Promise<void> {
  if (!(await pending(db))) return;
  await drizzleMigrate(db, idemMigrationConfig);
}

/** Whether a shipped migration is newer than the journal's last (Drizzle's own rule). */
async function pending(db: NodePgDatabase<Record<string, unknown>>): Promise<boolean> {
  const shipped = readMigrationFiles(idemMigrationConfig);
  const newest = Math.max(...shipped.map((migration) => migration.folderMillis));
  const { migrationsSchema, migrationsTable } = idemMigrationConfig;
  const [journal] = await executeRows<{ present: boolean }>(
    db,
    sql`select to_regclass(${`${migrationsSchema}.${migrationsTable}`}) is not null as present`,
  );
  if (!journal?.present) return true;
  const [last] = await executeRows<{ last: string | null }>(
    db,
    sql`select max(created_at)::text as last from ${sql.identifier(migrationsSchema)}.${sql.identifier(migrationsTable)}`,
  );
  return last?.last == null || Number(last.last) < newest;
}
