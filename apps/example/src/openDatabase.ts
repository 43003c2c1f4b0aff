import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import type { RecoveryStore } from '@idem/contract';
import {
  createNodePostgresStore,
  migrate as migrateIdemNodePostgres,
} from '@idem/store-drizzle/node-postgres';
import { createPgliteStore, migrate as migrateIdemPglite } from '@idem/store-drizzle/pglite';
import {
  createPostgresJsStore,
  detectTransactionPooler,
  migrate as migrateIdemPostgres,
} from '@idem/store-drizzle/postgres-js';
import type { ExtractTablesWithRelations } from 'drizzle-orm';
import { drizzle as drizzleNodePostgres, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import { migrate as migrateAppNodePostgres } from 'drizzle-orm/node-postgres/migrator';
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { migrate as migrateAppPglite } from 'drizzle-orm/pglite/migrator';
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js';
import { migrate as migrateAppPostgres } from 'drizzle-orm/postgres-js/migrator';
import pg from 'pg';
import postgres from 'postgres';
import type { JsonLogger } from './jsonLogger.js';
import type { DatabaseDriver, DatabasePooler } from './readConfig.js';

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
  /** The driver under it: `postgres-js` or `pg` on PostgreSQL, `pglite` on PGlite. */
  driver: DatabaseDriver | 'pglite';
  /** Where the data lives (and through which driver), without credentials: for the start-up line. */
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
  databaseDriver?: DatabaseDriver;
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
    const driver = options.databaseDriver ?? 'postgres-js';
    options.log?.({ msg: 'database.driver', driver });
    const bounds = { pooled, connectTimeoutMs, statementTimeoutMs };
    if (driver === 'pg') return openNodePostgres(options.databaseUrl, bounds, options.log);
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
      driver,
      where: `PostgreSQL ${url.host}${url.pathname} (postgres.js)`,
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
    driver: 'pglite',
    where: `PGlite ${options.dataDir}`,
    db,
    store: createPgliteStore(db),
    close: () => client.close(),
  };
}

/**
 * PostgreSQL through node-postgres: a pg `Pool` under Drizzle's node-postgres driver and idem's
 * `createNodePostgresStore`, with the waits bounded as on postgres.js. Opening a connection, and
 * waiting for one of the pool's 10, takes at most the connect timeout; a statement is cut by the
 * server at `statement_timeout` (a start-up parameter, so not sent through a transaction-mode
 * pooler) and given up by the client at `query_timeout`, a little later, which holds behind a
 * pooler and against a server that never answers. pg prepares a statement only when it is given
 * a name, and neither Drizzle nor idem names one: behind a pooler there is nothing to turn off.
 */
async function openNodePostgres(
  databaseUrl: string,
  bounds: { pooled: boolean; connectTimeoutMs: number; statementTimeoutMs: number },
  log: JsonLogger | undefined,
): Promise<AppDatabase> {
  const { pooled, connectTimeoutMs, statementTimeoutMs } = bounds;
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: 10,
    connectionTimeoutMillis: connectTimeoutMs,
    // PgBouncer 1.18 refuses unknown start-up parameters: set it on the role behind a pooler.
    ...(!pooled && statementTimeoutMs > 0 ? { statement_timeout: statementTimeoutMs } : {}),
    // The server's own timeout answers first (SQLSTATE 57014) where it is set.
    ...(statementTimeoutMs > 0 ? { query_timeout: statementTimeoutMs + connectTimeoutMs } : {}),
  });
  const db = withReleasingTransactions(drizzleNodePostgres({ client: pool }), pool);
  // The store listens for connection failures on the pool and on every client it hands out
  // (a failure no one listens to ends the process): created first, so migrations are covered.
  const store = createNodePostgresStore(db, {
    onWarning: (warning) => log?.({ msg: 'store.warning', warning }),
  });
  try {
    await migrateIdemNodePostgres(db);
    await migrateAppNodePostgres(db, appMigrations);
  } catch (error) {
    await pool.end();
    throw error;
  }
  const url = new URL(databaseUrl);
  return {
    kind: 'postgres',
    driver: 'pg',
    where: `PostgreSQL ${url.host}${url.pathname} (pg)`,
    db,
    store,
    close: () => pool.end(),
  };
}

/**
 * `db` whose `transaction` gives its client back to the pool whatever fails. Drizzle's own checks
 * a client out and releases it after COMMIT or ROLLBACK, but not when BEGIN fails (the database
 * went away between the checkout and the BEGIN): that client is never released, and once the
 * pool's 10 are lost so, every query waits for a client until the connect timeout, after the
 * database is back too. Here the transaction runs on a client checked out first and released in
 * a `finally`; the pool drops a client whose connection failed.
 */
function withReleasingTransactions(
  db: NodePgDatabase & { $client: pg.Pool },
  pool: pg.Pool,
): NodePgDatabase & { $client: pg.Pool } {
  const transaction: typeof db.transaction = async (run, config) => {
    const client = await pool.connect();
    try {
      return await drizzleNodePostgres({ client }).transaction(run, config);
    } finally {
      client.release();
    }
  };
  return Object.create(db, { transaction: { value: transaction } }) as typeof db;
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
