import { randomBytes } from 'node:crypto';
import type { RecoveryStore } from '@idem/contract';
import type { ExtractTablesWithRelations, SQL } from 'drizzle-orm';
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from 'drizzle-orm/pg-core';

/** The database the kit hands your app: Drizzle's Postgres core, whichever driver is under it. */
export type IdemTestDb = PgDatabase<PgQueryResultHKT>;

/** A transaction on {@link IdemTestDb}: what `ctx.idem.tx` and `ctx.idem.phase` hand out. */
export type IdemTestTx = PgTransaction<
  PgQueryResultHKT,
  Record<string, never>,
  ExtractTablesWithRelations<Record<string, never>>
>;

/** The key store the kit hands your app, for `createIdempotency({ store })`. */
export type IdemTestStore = RecoveryStore<IdemTestTx>;

/** Where the kit runs: in-memory PGlite by default, or PostgreSQL by URL. */
export interface IdemTestDatabaseOptions {
  /**
   * A PostgreSQL URL, e.g. `process.env.DATABASE_URL`. Needs the `postgres` package (postgres.js)
   * installed. Defaults to none: an in-memory PGlite database, nothing to set up.
   */
  databaseUrl?: string;
  /**
   * With {@link databaseUrl}: create a throwaway database on that server for the run
   * (`idem_test_<pid>_<random>`, which needs the `CREATEDB` privilege) and drop it on close, so a
   * run never meets another's rows. False runs in the URL's own database and leaves its rows.
   * Defaults to true.
   */
  freshDatabase?: boolean;
  /**
   * Connections of each postgres.js pool (one per server, one for the kit). A local-mode request
   * holds one for its transaction: give at least as many as the requests a gate sends at once.
   * Defaults to 10.
   */
  poolSize?: number;
}

/** One server's view of the database: its connection and a store on it. */
export interface IdemTestConnection {
  /** The server's database: its own postgres.js pool on PostgreSQL, the shared one on PGlite. */
  readonly db: IdemTestDb;
  /** The key store on {@link db}, its clock shifted by {@link clockShiftMs}. */
  readonly store: IdemTestStore;
  /** Milliseconds the store's database clock runs ahead of the database's. */
  readonly clockShiftMs: number;
  /** Ends the connection (PostgreSQL); a no-op on PGlite, whose database the run closes. */
  close(): Promise<void>;
}

/**
 * A migrated database for a run: idem's tables are in it. Close it (or `await using`) to end its
 * connections and, for a fresh PostgreSQL database, drop it.
 */
export interface IdemTestDatabase extends AsyncDisposable {
  /** `pglite` (in memory, one transaction at a time) or `postgres`. */
  readonly kind: 'pglite' | 'postgres';
  /** The PostgreSQL URL of the database in use (the fresh one), or null on PGlite. */
  readonly url: string | null;
  /** The kit's own connection: your `setup` and `effect` functions get it. */
  readonly db: IdemTestDb;
  /**
   * A store on the kit's connection whose clock runs `clockShiftMs` ahead: the store's "now" for
   * leases, windows and the reaper, moved without waiting. Defaults to 0.
   */
  storeAt(clockShiftMs?: number): IdemTestStore;
  /**
   * A connection for one more server: a new postgres.js pool on PostgreSQL, the shared database
   * on PGlite; its store's clock runs `clockShiftMs` ahead (defaults to 0).
   */
  connect(options?: { clockShiftMs?: number }): Promise<IdemTestConnection>;
  /** Counts the rows of a query: `count(sql\`select 1 from orders\`)`. */
  count(query: SQL): Promise<number>;
  close(): Promise<void>;
}

/**
 * Opens the database of a run and applies idem's migrations: in-memory PGlite by default, or
 * PostgreSQL at `databaseUrl` (a fresh database there unless `freshDatabase: false`). Each driver
 * is loaded only when used.
 *
 * @example
 * await using database = await openIdemTestDatabase({ databaseUrl: process.env.DATABASE_URL });
 */
export async function openIdemTestDatabase(
  options: IdemTestDatabaseOptions = {},
): Promise<IdemTestDatabase> {
  return options.databaseUrl ? openPostgres(options.databaseUrl, options) : openPglite();
}

async function openPglite(): Promise<IdemTestDatabase> {
  const [{ PGlite }, { drizzle }, { createPgliteStore, migrate }, { sql }] = await Promise.all([
    importDriver<typeof import('@electric-sql/pglite')>('@electric-sql/pglite', 'PGlite'),
    import('drizzle-orm/pglite'),
    import('@idem/store-drizzle/pglite'),
    import('drizzle-orm'),
  ]);
  const client = new PGlite();
  const pglite = drizzle(client);
  await migrate(pglite);
  const db = pglite as unknown as IdemTestDb;
  const storeAt = (clockShiftMs = 0): IdemTestStore =>
    createPgliteStore(pglite, {
      dangerouslyShiftClockMs: clockShiftMs,
    }) as unknown as IdemTestStore;
  let closed: Promise<void> | null = null;
  const close = () =>
    (closed ??= withDeadline(client.close(), CLOSE_DEADLINE_MS).catch(() => undefined));
  return {
    kind: 'pglite',
    url: null,
    db,
    storeAt,
    connect: async ({ clockShiftMs = 0 } = {}) => ({
      db,
      store: storeAt(clockShiftMs),
      clockShiftMs,
      close: async () => {},
    }),
    count: async (query) => {
      const result = await pglite.execute(sql`select count(*)::int as n from (${query}) q`);
      return (result.rows[0] as { n: number }).n;
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}

async function openPostgres(
  serverUrl: string,
  options: IdemTestDatabaseOptions,
): Promise<IdemTestDatabase> {
  const [{ default: postgres }, { drizzle }, { createPostgresJsStore, migrate }, { sql }] =
    await Promise.all([
      importDriver<{ default: typeof import('postgres') }>('postgres', 'databaseUrl'),
      import('drizzle-orm/postgres-js'),
      import('@idem/store-drizzle/postgres-js'),
      import('drizzle-orm'),
    ]);
  const poolSize = options.poolSize ?? 10;
  let url = serverUrl;
  let drop = async () => {};
  if (options.freshDatabase ?? true) {
    const name = `idem_test_${process.pid}_${randomBytes(4).toString('hex')}`;
    const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
    try {
      await admin.unsafe(`create database "${name}"`);
    } finally {
      await admin.end({ timeout: 2 });
    }
    const fresh = new URL(serverUrl);
    fresh.pathname = `/${name}`;
    url = fresh.toString();
    drop = async () => {
      const admin = postgres(serverUrl, { max: 1, onnotice: () => {} });
      try {
        await admin.unsafe(`drop database if exists "${name}" with (force)`);
      } finally {
        await admin.end({ timeout: 2 });
      }
    };
  }
  const open = () => {
    const client = postgres(url, { max: poolSize, onnotice: () => {} });
    return { client, db: drizzle(client) };
  };
  const storeOn = (db: ReturnType<typeof open>['db'], clockShiftMs: number): IdemTestStore =>
    createPostgresJsStore(db, {
      dangerouslyShiftClockMs: clockShiftMs,
      // The kit is a test tool: the outage warning is for servers that stay up.
      postgresJsOutageWarning: false,
    }) as unknown as IdemTestStore;
  const main = open();
  const connections = new Set<ReturnType<typeof open>>([main]);
  try {
    await migrate(main.db);
  } catch (error) {
    await main.client.end({ timeout: 2 });
    await drop();
    throw error;
  }
  let closed: Promise<void> | null = null;
  const close = () =>
    (closed ??= (async () => {
      await Promise.all([...connections].map(({ client }) => client.end({ timeout: 2 })));
      await drop();
    })());
  return {
    kind: 'postgres',
    url,
    db: main.db as unknown as IdemTestDb,
    storeAt: (clockShiftMs = 0) => storeOn(main.db, clockShiftMs),
    connect: async ({ clockShiftMs = 0 } = {}) => {
      const connection = open();
      connections.add(connection);
      return {
        db: connection.db as unknown as IdemTestDb,
        store: storeOn(connection.db, clockShiftMs),
        clockShiftMs,
        close: async () => {
          if (!connections.delete(connection)) return;
          await connection.client.end({ timeout: 2 });
        },
      };
    },
    count: async (query) => {
      const rows = (await main.db.execute(
        sql`select count(*)::int as n from (${query}) q`,
      )) as unknown as { n: number }[];
      return rows[0]!.n;
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}

/** A PGlite that a procedure deadlocked never closes: the run gives up on it after this. */
const CLOSE_DEADLINE_MS = 2_000;

function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), ms);
      timer.unref();
    }),
  ]).finally(() => clearTimeout(timer));
}

/** Imports a driver the user installs, or fails naming the package and what needs it. */
async function importDriver<T>(name: string, neededFor: 'PGlite' | 'databaseUrl'): Promise<T> {
  try {
    return (await import(name)) as T;
  } catch (error) {
    const why =
      neededFor === 'PGlite'
        ? 'the kit runs on in-memory PGlite when no databaseUrl is given'
        : 'databaseUrl runs the kit on PostgreSQL through postgres.js';
    throw new Error(
      `@idem/testing: cannot load ${name} (${why}): install it, e.g. npm install -D ${name}`,
      { cause: error },
    );
  }
}
