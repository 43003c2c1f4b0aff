import type { StatementCounter } from '../benchControl.js';
import type { ConnectionPeak } from '../benchDatabase.js';
import { FIRST_ATTEMPT, type BurstResult } from '../jobs.js';
import { startServer, type BenchServer } from '../processes.js';
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

/** The runs of one kind of storm: every request with the same `Idempotency-Attempt`, or none. */
export interface StormVariant {
  /** The `Idempotency-Attempt` every request sent; null: none. */
  attempt: number | null;
  runs: StormRun[];
  totalMs: Spread;
  executions: number[];
  /** Handler invocations, run by run (`runs[i].invocations`). */
  invocations: number[];
  /** Answers with a 5xx status or a failed connection, over the runs. */
  fiveHundreds: number;
  peakConnections: number;
  peakActive: number;
}

/** The same key from `requests` clients at once, split over `servers` server processes. */
export interface StormBurst {
  requests: number;
  servers: number;
  /** The sum of the servers' pool sizes: the most connections they may open. */
  configuredConnections: number;
  /** No attempt header: a raw HTTP client. */
  raw: StormVariant;
  /**
   * `Idempotency-Attempt: 1` on every request: an old or careless client, or a reload that
   * restarts the client's count, says "first attempt" of a key another request stores.
   */
  firstAttempt: StormVariant;
}

/** One request that commits, then `retries` requests with its key, one after another. */
export interface SequentialRetries {
  /** The `Idempotency-Attempt` every request sent, the first and each retry. */
  attempt: number;
  retries: number;
  /** Handler invocations over the first request and its retries, committed or rolled back. */
  invocations: number;
  /** Rows the handler wrote for this key's input. */
  executions: number;
  /** Retries answered with `Idempotent-Replayed: true`. */
  replayed: number;
  statuses: Record<string, number>;
}

export interface StormResult {
  sequential: SequentialRetries;
  /** The concurrent storm; skipped on PGlite. */
  burst: StormBurst | { skipped: string };
}

/** Retries of the sequential case (after its first request). */
const SEQUENTIAL_RETRIES = 10;

/**
 * The same key from `requests` clients at once, split over two server processes on one
 * PostgreSQL database, once without the attempt header and once with `Idempotency-Attempt: 1` on
 * every request (the order alternating run by run); connections are sampled from
 * `pg_stat_activity` every few ms. Then, on either database, one request and ten sequential
 * retries of its key, each saying it is the first attempt: a stored key must never run the
 * handler again, whatever the header says.
 */
export async function measureStorm(ctx: SectionContext): Promise<StormResult> {
  const sequential = await measureSequential(ctx);
  ctx.log(
    `storm sequential: ${sequential.invocations} handler invocation(s) over 1 request and ${sequential.retries} retries (attempt ${sequential.attempt}), ${sequential.executions} execution(s), ${sequential.replayed} replayed`,
  );
  if (!ctx.database) {
    return {
      sequential,
      burst: { skipped: 'PGlite lives inside one process: two server processes cannot share it' },
    };
  }
  await using second = await startServer({ ...ctx.serverEnv, BENCH_SETUP: '0' });
  const servers = [ctx.server, second];
  const runs: Record<'raw' | 'firstAttempt', StormRun[]> = { raw: [], firstAttempt: [] };
  for (let rep = 0; rep < ctx.profile.storm.reps; rep++) {
    // The order alternates run by run, so that neither variant always meets a warmer server.
    const order =
      rep % 2 === 0 ? (['raw', 'firstAttempt'] as const) : (['firstAttempt', 'raw'] as const);
    for (const variant of order) {
      const run = await stormRun(ctx, servers, variant === 'raw' ? null : FIRST_ATTEMPT);
      runs[variant].push(run);
      ctx.log(
        `storm ${variant} run ${rep + 1}: ${run.totalMs.toFixed(0)} ms, ${run.executions} execution(s), ${run.invocations} handler invocation(s), statuses ${JSON.stringify(run.statuses)}, peak ${run.peak.total} connections (${run.peak.active} active)`,
      );
    }
  }
  return {
    sequential,
    burst: {
      requests: ctx.profile.storm.requests,
      servers: servers.length,
      configuredConnections: servers.length * ctx.profile.poolMax,
      raw: summarize(null, runs.raw),
      firstAttempt: summarize(FIRST_ATTEMPT, runs.firstAttempt),
    },
  };
}

async function stormRun(
  ctx: SectionContext,
  servers: BenchServer[],
  attempt: number | null,
): Promise<StormRun> {
  const database = ctx.database!;
  const sku = keyPrefix('storm');
  // Nothing but the storm reaches either server until its counters are read back.
  await Promise.all(servers.map((s) => s.post('counters/reset')));
  const before = (await database.connections()).total;
  const stopSampling = database.sampleConnections();
  const burst = await ctx.worker.run(
    {
      kind: 'burst',
      urls: servers.map((s) => s.url),
      path: 'idem.create',
      account: ACCOUNT,
      input: { sku, quantity: 1 },
      key: sku,
      ...(attempt === null ? {} : { attempt }),
      count: ctx.profile.storm.requests,
    },
    120_000,
  );
  const peak = await stopSampling();
  const { count } = await ctx.server.post<{ count: number }>('orders/count', { sku });
  const counters = await Promise.all(servers.map((s) => s.get<StatementCounter>('stats')));
  const invocations = counters.reduce((n, c) => n + c.invocations.idem, 0);
  return { ...burst, executions: count, invocations, peak, before };
}

function summarize(attempt: number | null, runs: StormRun[]): StormVariant {
  return {
    attempt,
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

/**
 * One request with a new key, then its retries one at a time on one connection, every one with
 * `Idempotency-Attempt: 1`, to the main server: the handler's invocations in that process,
 * counted from before the first request to after the last.
 */
async function measureSequential(ctx: SectionContext): Promise<SequentialRetries> {
  const sku = keyPrefix('sequential');
  await ctx.server.post('counters/reset');
  const result = await ctx.worker.run(
    {
      kind: 'closed-loop',
      url: ctx.server.url,
      path: 'idem.create',
      account: ACCOUNT,
      input: { sku, quantity: 1 },
      // One key (count 1): request 0 is the first, requests 1 .. retries its retries.
      keys: { kind: 'cycle', prefix: sku, count: 1, attempt: FIRST_ATTEMPT },
      concurrency: 1,
      warmupMs: 0,
      requests: 1 + SEQUENTIAL_RETRIES,
    },
    60_000,
  );
  const counter = await ctx.server.get<StatementCounter>('stats');
  const { count } = await ctx.server.post<{ count: number }>('orders/count', { sku });
  return {
    attempt: FIRST_ATTEMPT,
    retries: SEQUENTIAL_RETRIES,
    invocations: counter.invocations.idem,
    executions: count,
    replayed: result.replayed,
    statuses: result.statuses,
  };
}
