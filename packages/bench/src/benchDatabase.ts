import { randomBytes } from 'node:crypto';
import postgres from 'postgres';

/** A fresh PostgreSQL database for one bench run, and an admin connection beside it. */
export interface BenchDatabase extends AsyncDisposable {
  name: string;
  url: string;
  /** `version()` of the server. */
  serverVersion: string;
  /** Samples connections to the bench database every few ms until the returned stop is called. */
  sampleConnections(): () => Promise<ConnectionPeak>;
  connections(): Promise<ConnectionPeak>;
  /** Process ids of the backends connected to the bench database now (`pg_stat_activity`). */
  backendPids(): Promise<number[]>;
  /**
   * Starts watching the server's other databases (all but this run's bench databases); the
   * returned stop says what they did in between.
   */
  watchOtherDatabases(): Promise<() => Promise<OtherDatabases>>;
}

/**
 * What the server's other databases did while the bench ran, from `pg_stat_database` (whose
 * counters a backend flushes within seconds, not at once). The WAL is the whole server's, so when
 * either number is not 0 the WAL figures hold others' writes too.
 */
export interface OtherDatabases {
  /** Rows inserted, updated or deleted in the other databases that existed at the end. */
  rowsWritten: number;
  /** Other databases created or dropped meanwhile (a dropped one's writes are not counted). */
  createdOrDropped: number;
}

/** Backends connected to the bench database: all of them, and those not idle. */
export interface ConnectionPeak {
  total: number;
  active: number;
  samples: number;
}

/**
 * Creates `idem_bench_<pid>_<random>` on the server of `serverUrl` (any database of it: the
 * admin connection stays there, so it is never counted among the bench's connections) and drops
 * it, with force, when disposed.
 */
export async function createBenchDatabase(serverUrl: string): Promise<BenchDatabase> {
  const name = `idem_bench_${process.pid}_${randomBytes(4).toString('hex')}`;
  const admin = postgres(serverUrl, { max: 1, onnotice: () => {}, connect_timeout: 5 });
  const [{ version }] = (await admin`select version()`) as unknown as [{ version: string }];
  await admin.unsafe(`create database "${name}"`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;

  const connections = async (): Promise<ConnectionPeak> => {
    const [row] = (await admin`
      select count(*)::int as total, count(*) filter (where state <> 'idle')::int as active
      from pg_stat_activity where datname = ${name}`) as unknown as [ConnectionPeak];
    return { total: row.total, active: row.active, samples: 1 };
  };
  const backendPids = async (): Promise<number[]> => {
    const rows = (await admin`
      select pid from pg_stat_activity where datname = ${name}`) as unknown as { pid: number }[];
    return rows.map((row) => Number(row.pid));
  };
  // This run's databases: this one and any other it creates (`idem_bench_<pid>_<random>`).
  const ours = `idem\\_bench\\_${process.pid}\\_%`;
  const written = async (): Promise<Map<string, number>> => {
    const rows = (await admin`
      select datid::text as id, (tup_inserted + tup_updated + tup_deleted)::text as written
      from pg_stat_database
      where datname is not null and datname not like ${ours}`) as unknown as {
      id: string;
      written: string;
    }[];
    return new Map(rows.map((row) => [row.id, Number(row.written)]));
  };
  const watchOtherDatabases = async () => {
    const before = await written();
    return async (): Promise<OtherDatabases> => {
      const after = await written();
      let rowsWritten = 0;
      let createdOrDropped = 0;
      for (const [id, n] of after) {
        if (!before.has(id)) createdOrDropped += 1;
        rowsWritten += Math.max(0, n - (before.get(id) ?? 0));
      }
      for (const id of before.keys()) if (!after.has(id)) createdOrDropped += 1;
      return { rowsWritten, createdOrDropped };
    };
  };
  let dropped = false;
  const drop = async () => {
    if (dropped) return;
    dropped = true;
    try {
      await admin.unsafe(`drop database if exists "${name}" with (force)`);
    } finally {
      await admin.end({ timeout: 2 });
    }
  };
  return {
    name,
    url: url.toString(),
    serverVersion: version,
    connections,
    backendPids,
    watchOtherDatabases,
    sampleConnections() {
      const peak: ConnectionPeak = { total: 0, active: 0, samples: 0 };
      let running = true;
      const loop = (async () => {
        while (running) {
          const now = await connections();
          peak.total = Math.max(peak.total, now.total);
          peak.active = Math.max(peak.active, now.active);
          peak.samples += 1;
          await new Promise((resolve) => setTimeout(resolve, 2));
        }
      })();
      return async () => {
        running = false;
        await loop;
        return peak;
      };
    },
    [Symbol.asyncDispose]: drop,
  };
}
