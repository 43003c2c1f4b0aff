import type { StatementCounter } from '../benchControl.js';
import type { ConnectionPeak } from '../benchDatabase.js';
import type { BurstResult } from '../jobs.js';
import { startServer } from '../processes.js';
import { spread, type Spread } from '../stats.js';
import { ACCOUNT, keyPrefix, type SectionContext } from './SectionContext.js';

export interface StormRun extends BurstResult {
  /** Rows the handler wrote for this storm's input: its committed executions. */
  executions: number;
  /**
   * Times the `idem.create` handler was invoked, summed over both servers: committed or rolled
   * back (a duplicate's handler losing a commit-time claim runs and is rolled back).
   */
  invocations: number;
  /** Peak backends on the bench database while the storm ran. */
  peak: ConnectionPeak;
  /** Backends already connected when it began (pools open connections lazily). */
  before: number;
}

export type StormResult =
  | { skipped: string }
  | {
      requests: number;
      servers: number;
      /** The sum of the servers' pool sizes: the most connections they may open. */
      configuredConnections: number;
      runs: StormRun[];
      totalMs: Spread;
      executions: number[];
      /** Handler invocations, run by run (`runs[i].invocations`). */
      invocations: number[];
      fiveHundreds: number;
      peakConnections: number;
      peakActive: number;
    };

/**
 * The same key from `requests` clients at once, split over two server processes on one
 * PostgreSQL database. Connections are sampled from `pg_stat_activity` every few ms.
 */
export async function measureStorm(ctx: SectionContext): Promise<StormResult> {
  if (!ctx.database) {
    return { skipped: 'PGlite lives inside one process: two server processes cannot share it' };
  }
  await using second = await startServer({ ...ctx.serverEnv, BENCH_SETUP: '0' });
  const servers = [ctx.server, second];
  const runs: StormRun[] = [];
  for (let rep = 0; rep < ctx.profile.storm.reps; rep++) {
    const sku = keyPrefix('storm');
    // Nothing but the storm reaches either server until its counters are read back.
    await Promise.all(servers.map((s) => s.post('counters/reset')));
    const before = (await ctx.database.connections()).total;
    const stopSampling = ctx.database.sampleConnections();
    const burst = await ctx.worker.run(
      {
        kind: 'burst',
        urls: servers.map((s) => s.url),
        path: 'idem.create',
        account: ACCOUNT,
        input: { sku, quantity: 1 },
        key: sku,
        count: ctx.profile.storm.requests,
      },
      120_000,
    );
    const peak = await stopSampling();
    const { count } = await ctx.server.post<{ count: number }>('orders/count', { sku });
    const counters = await Promise.all(servers.map((s) => s.get<StatementCounter>('stats')));
    const invocations = counters.reduce((n, c) => n + c.invocations.idem, 0);
    runs.push({ ...burst, executions: count, invocations, peak, before });
    ctx.log(
      `storm run ${rep + 1}: ${burst.totalMs.toFixed(0)} ms, ${count} execution(s), ${invocations} handler invocation(s), statuses ${JSON.stringify(burst.statuses)}, peak ${peak.total} connections (${peak.active} active)`,
    );
  }
  return {
    requests: ctx.profile.storm.requests,
    servers: servers.length,
    configuredConnections: servers.length * ctx.profile.poolMax,
    runs,
    totalMs: spread(runs.map((r) => r.totalMs)),
    executions: runs.map((r) => r.executions),
    invocations: runs.map((r) => r.invocations),
    fiveHundreds: runs.reduce(
      (n, r) =>
        n +
        Object.entries(r.statuses)
          .filter(([status]) => status === 'error' || Number(status) >= 500)
          .reduce((m, [, c]) => m + c, 0),
      0,
    ),
    peakConnections: Math.max(...runs.map((r) => r.peak.total)),
    peakActive: Math.max(...runs.map((r) => r.peak.active)),
  };
}
