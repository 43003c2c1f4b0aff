import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import type { RecoveryStore } from '@idem/contract';
import { createPgliteStore, migrate as migrateIdemPglite } from '@idem/store-drizzle/pglite';
import {
  createPostgresJsStore,
  detectTransactionPooler,
  migrate as migrateIdemPostgres,
} from '@idem/store-drizzle/postgres-js';
import type { ExtractTablesWithRelations } from 'drizzle-orm';
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { migrate as migrateAppPglite } from 'drizzle-orm/pglite/migrator';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import { migrate as migrateAppPostgres } from 'drizzle-orm/postgres-js/migrator';
import postgres from 'postgres';
import type { JsonLogger } from './jsonLogger.js';
import type { DatabasePooler } from './readConfig.js';

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
  /** See `ExampleConfig`; defaults as there. */
  databasePooler?: DatabasePooler;
  databaseConnectTimeoutMs?: number;
  databaseStatementTimeoutMs?: number;
  log?: JsonLogger;
}): Promise<AppDatabase> {
  if (options.databaseUrl) {
    const connectTimeoutMs = options.databaseConnectTimeoutMs ?? 1_000;
    const statementTimeoutMs = options.databaseStatementTimeoutMs ?? 5_000;
    const pooled = await behindTransactionPooler(
      options.databaseUrl,
      options.databasePooler ?? 'auto',
      connectTimeoutMs,
      options.log,
    );
    const client = postgres(options.databaseUrl, {
      max: 10,
      onnotice: () => {},
      // A transaction-mode pooler cannot carry named prepared statements, the client's own
      // (postgres.js prepares its COMMIT) included: see `preparedStatements` in the store.
      prepare: !pooled,
      // Bounded waits while the database is down: a refused or slow connection fails within
      // the connect timeout, and a closed one is tried again after at most 200 ms (postgres.js
      // backs off up to 20 s by default, and a query waits for that), so a keyed request gets
      // its 503 promptly and the first request after the database returns is served.
      connect_timeout: connectTimeoutMs / 1000,
      backoff: (retries: number) => Math.min(0.025 * 2 ** retries, 0.2),
      // PgBouncer 1.18 refuses unknown start-up parameters: set it on the role behind a pooler.
      connection:
        !pooled && statementTimeoutMs > 0 ? { statement_timeout: statementTimeoutMs } : {},
    });
    const db = drizzlePostgres(client);
    await migrateIdemPostgres(db);
    await migrateAppPostgres(db, appMigrations);
    const url = new URL(options.databaseUrl);
    return {
      kind: 'postgres',
      where: `PostgreSQL ${url.host}${url.pathname}`,
      db,
      store: createPostgresJsStore(db, {
        preparedStatements: !pooled,
        onWarning: (warning) => options.log?.({ msg: 'store.warning', warning }),
      }),
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

/**
 * Whether the example must run without prepared statements, from `IDEM_EXAMPLE_DATABASE_POOLER`
 * and, unless that says `transaction`, a start-up probe. `none` behind a transaction-mode pooler
 * is a start-up error naming the fix, instead of the failed and silently rolled-back
 * transactions that prepared statements would cause there.
 */
async function behindTransactionPooler(
  url: string,
  setting: DatabasePooler,
  connectTimeoutMs: number,
  log: JsonLogger | undefined,
): Promise<boolean> {
  if (setting === 'transaction') return true;
  const found = await detectTransactionPooler(url, {
    timeoutMs: Math.max(3 * connectTimeoutMs, 3_000),
  });
  if (!found) return false;
  if (setting === 'none') {
    throw new Error(
      'DATABASE_URL reaches PostgreSQL through a transaction-mode pooler (two connections shared ' +
        'one server process), which cannot carry prepared statements, but ' +
        'IDEM_EXAMPLE_DATABASE_POOLER=none says there is none. Set ' +
        'IDEM_EXAMPLE_DATABASE_POOLER=transaction (or leave it unset to detect it), or connect ' +
        'to PostgreSQL directly.',
    );
  }
  log?.({
    msg: 'database.pooler',
    pooler: 'transaction',
    detail:
      'found a transaction-mode pooler: prepared statements are off; set ' +
      'IDEM_EXAMPLE_DATABASE_POOLER=transaction to skip the probe',
  });
  return true;
}
