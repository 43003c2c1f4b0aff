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
