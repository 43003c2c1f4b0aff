/// <reference types="node" />
import { fileURLToPath } from 'node:url';

/**
 * Where idem's shipped migrations live and where their bookkeeping goes, for Drizzle's migrator
 * (`migrate(db, idemMigrationConfig)` from `drizzle-orm/<driver>/migrator`). The driver entries'
 * `migrate(db)` use it; it is exported for drivers without an entry of their own (Neon's serverless driver, ...).
 *
 * - `migrationsFolder`: the package's `migrations/` folder, resolved from this module (the same
 *   depth in `src/` and `dist/`).
 * - `migrationsTable`: `__idem_migrations`, idem's own journal, so running idem's migrations
 *   never reads or writes the application's `__drizzle_migrations`, and the reverse.
 * - `migrationsSchema`: `drizzle`, the schema Drizzle keeps its journals in by default.
 */
export const idemMigrationConfig = {
  migrationsFolder: fileURLToPath(new URL('../migrations', import.meta.url)),
  migrationsTable: '__idem_migrations',
  migrationsSchema: 'drizzle',
} as const;
