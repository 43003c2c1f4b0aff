import { sql } from 'drizzle-orm';
import { readMigrationFiles } from 'drizzle-orm/migrator';
import type { PostgresJsDatabase } from 'drizzle-orm/postgres-js';
import { migrate as drizzleMigrate } from 'drizzle-orm/postgres-js/migrator';
import { idemMigrationConfig } from '../migrationConfig.js';
import { assertNoPreparedPooler } from './poolerCheck.js';

/**
 * Creates or upgrades idem's tables with the migrations shipped in this package, journaled in
 * `drizzle.__idem_migrations` (never the application's own journal). Running it again is a
 * no-op. Run it once at deploy or start-up, before the first request.
 *
 * Quiet on a database that is up to date: it reads the journal first and returns when nothing is
 * pending, so Drizzle's `create ... if not exists` statements, whose "already exists, skipping"
 * notices postgres.js prints by default, run only when there is something to migrate.
 *
 * Refuses first, with an error naming the fix (`PreparedStatementsBehindPoolerError`: the
 * client's `prepare: false`, the store's `preparedStatements: false`), when `db`'s client
 * prepares its statements and reaches PostgreSQL through a pooler in transaction mode: the
 * store's probe (`PostgresJsStoreOptions.poolerProbe`), bounded by 5 s, on two connections of
 * its own. A client opened with `prepare: false` is not probed.
 */
export async function migrate<TSchema extends Record<string, unknown>>(
  db: PostgresJsDatabase<TSchema>,
): Promise<void> {
  await assertNoPreparedPooler((db as { $client?: unknown }).$client, 5_000);
  if (!(await pending(db))) return;
  await drizzleMigrate(db, idemMigrationConfig);
}

/** Whether a shipped migration is newer than the journal's last (Drizzle's own rule). */
async function pending(db: PostgresJsDatabase<Record<string, unknown>>): Promise<boolean> {
  const shipped = readMigrationFiles(idemMigrationConfig);
  const newest = Math.max(...shipped.map((migration) => migration.folderMillis));
  const { migrationsSchema, migrationsTable } = idemMigrationConfig;
  const [journal] = await db.execute<{ present: boolean }>(
    sql`select to_regclass(${`${migrationsSchema}.${migrationsTable}`}) is not null as present`,
  );
  if (!journal?.present) return true;
  const [last] = await db.execute<{ last: string | null }>(
    sql`select max(created_at)::text as last from ${sql.identifier(migrationsSchema)}.${sql.identifier(migrationsTable)}`,
  );
  return last?.last == null || Number(last.last) < newest;
}
