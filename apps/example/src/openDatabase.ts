import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import type { RecoveryStore } from '@idem/contract';
import { createPgliteStore, migrate as migrateIdemPglite } from '@idem/store-drizzle/pglite';
import {
  createPostgresJsStore,
  migrate as migrateIdemPostgres,
} from '@idem/store-drizzle/postgres-js';
import type { ExtractTablesWithRelations } from 'drizzle-orm';
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { migrate as migrateAppPglite } from 'drizzle-orm/pglite/migrator';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import { migrate as migrateAppPostgres } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';

/** The example's database, whichever driver is under it. */
export type AppDb = PgDatabase<PgQueryResultHKT>;
/** A transaction on it: what `ctx.idem.tx` and `ctx.idem.phase(name, (tx) => ...)` hand out. */
export type AppTx = PgTransaction<
  PgQueryResultHKT,
  Record<string, never>,
  ExtractTablesWithRelations<Record<string, never>>
>;
/** idem's key store, with the recovery methods that external mode and the workers use. */
export type AppStore = RecoveryStore<AppTx>;

/** An open, migrated database. */
export interface AppDatabase {
  kind: 'postgres' | 'pglite';
  /** Where the data lives, without credentials: for the start-up line. */
  where: string;
  db: AppDb;
  store: AppStore;
  close(): Promise<void>;
}

/**
 * The example's own migrations (drizzle-kit, from `schema.ts`), journaled in Drizzle's default
 * `drizzle.__drizzle_migrations`. idem's migrations keep their own journal
 * (`drizzle.__idem_migrations`): neither ever reads or writes the other's.
 */
const appMigrations = {
  migrationsFolder: fileURLToPath(new URL('../migrations', import.meta.url)),
};

/**
 * Opens PostgreSQL at `databaseUrl`, or embedded PGlite in `dataDir` when there is none, and
 * applies idem's migrations and then the example's.
 */
export async function openDatabase(options: {
  databaseUrl: string | null;
  dataDir: string;
}): Promise<AppDatabase> {
  if (options.databaseUrl) {
    const client = postgres(options.databaseUrl, { max: 10, onnotice: () => {} });
    const db = drizzlePostgres(client);
    await migrateIdemPostgres(db);
    await migrateAppPostgres(db, appMigrations);
    const url = new URL(options.databaseUrl);
    return {
      kind: 'postgres',
      where: `PostgreSQL ${url.host}${url.pathname}`,
      db,
      store: createPostgresJsStore(db),
      close: () => client.end({ timeout: 2 }),
    };
  }
  // `memory://` is PGlite's throwaway in-memory database (tests); anything else is a folder.
  if (!options.dataDir.startsWith('memory://')) mkdirSync(options.dataDir, { recursive: true });
  const client = new PGlite(options.dataDir);
  const db = drizzlePglite(client);
  await migrateIdemPglite(db);
  await migrateAppPglite(db, appMigrations);
  return {
    kind: 'pglite',
    where: `PGlite ${options.dataDir}`,
    db,
    store: createPgliteStore(db),
    close: () => client.close(),
  };
}
