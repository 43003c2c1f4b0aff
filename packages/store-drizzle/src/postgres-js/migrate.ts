import type { PostgresJsDatabase } from 'drizzle-orm/postgres-js';
import { migrate as drizzleMigrate } from 'drizzle-orm/postgres-js/migrator';
import { idemMigrationConfig } from '../migrationConfig.js';

/**
 * Creates or upgrades idem's tables with the migrations shipped in this package, journaled in
 * `drizzle.__idem_migrations` (never the application's own journal). Running it again is a
 * no-op. Run it once at deploy or start-up, before the first request.
 */
export function migrate<TSchema extends Record<string, unknown>>(
  db: PostgresJsDatabase<TSchema>,
): Promise<void> {
  return drizzleMigrate(db, idemMigrationConfig);
}
