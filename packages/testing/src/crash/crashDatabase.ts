import { rmSync } from 'node:fs';
import { cp, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openIdemTestDatabase, type IdemTestDatabase } from '../app/IdemTestDatabase.js';
import type { IdemTestDb, IdemTestStore } from '../app/IdemTestDatabase.js';

/**
 * The database the crash gate's processes take turns on: PostgreSQL by URL (each process its own
 * pool), or PGlite in a data directory on disk, which one process opens at a time (the gate
 * starts the next only after the last one has exited; PGlite recovers a directory whose process
 * was killed the way PostgreSQL recovers from a crash, from its write-ahead log).
 */
export type CrashDatabaseLocation =
  { kind: 'pglite'; dataDir: string } | { kind: 'postgres'; url: string };

/** Opens `location` in this process as a run's database, migrated (idempotent). */
export function openCrashDatabase(location: CrashDatabaseLocation): Promise<IdemTestDatabase> {
  return location.kind === 'postgres'
    ? openIdemTestDatabase({ databaseUrl: location.url, freshDatabase: false })
    : openPgliteDirectory(location.dataDir);
}

/**
 * The same database, every store it hands out (`storeAt`, `connect`) with its clock moved
 * `clockShiftMs` further ahead: a process that arrives after the crashed ones' leases ended.
 */
export function shiftedDatabase(
  database: IdemTestDatabase,
  clockShiftMs: number,
): IdemTestDatabase {
  return {
    ...database,
    storeAt: (shift = 0) => database.storeAt(clockShiftMs + shift),
    connect: (options = {}) =>
      database.connect({ clockShiftMs: clockShiftMs + (options.clockShiftMs ?? 0) }),
  };
}

async function openPgliteDirectory(dataDir: string): Promise<IdemTestDatabase> {
  const [{ PGlite }, { drizzle }, { createPgliteStore, migrate }, { sql }] = await Promise.all([
    import('@electric-sql/pglite'),
    import('drizzle-orm/pglite'),
    import('@idem/store-drizzle/pglite'),
    import('drizzle-orm'),
  ]);
  const client = new PGlite(dataDir);
  const pglite = drizzle(client);
  await migrate(pglite);
  const db = pglite as unknown as IdemTestDb;
  const storeAt = (clockShiftMs = 0): IdemTestStore =>
    createPgliteStore(pglite, {
      dangerouslyShiftClockMs: clockShiftMs,
    }) as unknown as IdemTestStore;
  let closed: Promise<void> | null = null;
  const close = () => (closed ??= client.close());
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

let template: Promise<string> | undefined;

const TEMPLATE_PREFIX = 'idem-crash-template-';

/**
 * Creates a PGlite data directory at `dataDir` with idem's tables: a copy of one made once per
 * process (creating a cluster takes seconds, copying one a fraction of that). The template is
 * removed when the process exits, or, when it ended without running its exit handlers (a test
 * runner's worker is often stopped that way), by the next process that makes one.
 */
export async function createPgliteDirectory(dataDir: string): Promise<void> {
  template ??= (async () => {
    await removeOrphanTemplates();
    const dir = await mkdtemp(join(tmpdir(), `${TEMPLATE_PREFIX}${process.pid}-`));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    const database = await openPgliteDirectory(join(dir, 'pglite'));
    await database.close();
    return join(dir, 'pglite');
  })();
  await cp(await template, dataDir, { recursive: true });
}

/** Removes the templates of processes that no longer run. */
async function removeOrphanTemplates(): Promise<void> {
  const names = await readdir(tmpdir()).catch(() => [] as string[]);
  for (const name of names) {
    const pid = Number(/^idem-crash-template-(\d+)-/.exec(name)?.[1]);
    if (!pid || pid === process.pid || isRunning(pid)) continue;
    await rm(join(tmpdir(), name), { recursive: true, force: true });
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
