import type { BenchDatabase } from '../benchDatabase.js';
import type { BenchOptions, BenchProfile } from '../benchOptions.js';
import type { ClosedLoopJob, ClosedLoopResult } from '../jobs.js';
import type { BenchServer, LoadWorker } from '../processes.js';
import { spread, type Spread } from '../stats.js';

/** What every section is given (configured once per bench run). */
export interface SectionContext {
  options: BenchOptions;
  profile: BenchProfile;
  /** The main server, on the run's database (migrated). */
  server: BenchServer;
  worker: LoadWorker;
  /** The run's PostgreSQL database; null on PGlite. */
  database: BenchDatabase | null;
  /** Environment that starts another server on the same database (PostgreSQL). */
  serverEnv: Record<string, string>;
  log(message: string): void;
}

/** The caller every request comes from (idem's scope). */
export const ACCOUNT = 'acct_bench';
/** The input of every measured mutation. */
export const INPUT = { sku: 'bench', quantity: 1 };

/** A closed-loop job with the profile's timings, to the main server. */
export function loopJob(
  ctx: SectionContext,
  fields: Pick<ClosedLoopJob, 'path' | 'keys' | 'concurrency'> & Partial<ClosedLoopJob>,
): ClosedLoopJob {
  return {
    kind: 'closed-loop',
    url: ctx.server.url,
    account: ACCOUNT,
    input: INPUT,
    warmupMs: ctx.profile.warmupMs,
    durationMs: ctx.profile.durationMs,
    ...fields,
  };
}

/** Bound of one timed job: its own length plus a minute for stragglers and start-up. */
export function jobTimeout(ctx: SectionContext): number {
  return ctx.profile.warmupMs + ctx.profile.durationMs + 60_000;
}

/** A run and the WAL PostgreSQL wrote during it, per request (warm-up included); null on PGlite. */
export type WalRun = ClosedLoopResult & { walBytesPerRequest: number | null };

/** A WAL position (`16/B374D848`) as a byte offset. */
function walOffset(lsn: string): bigint {
  const [high, low] = lsn.split('/');
  return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`);
}

/**
 * Runs `job` on its server and reads where the WAL ended before and after it: the bytes per
 * request, warm-up included (its requests write too). The WAL is the cluster's, so anything else
 * the cluster writes meanwhile (autovacuum, a checkpoint's own records) counts; the runs of a
 * section are sequential, and their median is what to read.
 */
export async function runMeasuringWal(
  ctx: SectionContext,
  job: ClosedLoopJob,
  server: BenchServer = ctx.server,
): Promise<WalRun> {
  const before = await server.get<{ lsn: string | null }>('wal');
  const result = await ctx.worker.run(job, jobTimeout(ctx));
  const after = await server.get<{ lsn: string | null }>('wal');
  const walBytesPerRequest =
    before.lsn === null || after.lsn === null || result.keysUsed === 0
      ? null
      : Number(walOffset(after.lsn) - walOffset(before.lsn)) / result.keysUsed;
  return { ...result, walBytesPerRequest };
}

/** Several runs of one variant: throughput and latency percentiles as medians with spread. */
export interface RunsSummary {
  throughput: Spread;
  p50: Spread;
  p99: Spread;
  /** WAL bytes per request, run by run (PostgreSQL, runs made by `runMeasuringWal`). */
  walBytesPerRequest?: Spread;
  /** Measured requests over all runs. */
  requests: number;
  /** Measured responses other than 200, over all runs, by status. */
  failures: Record<string, number>;
}

export function summarizeRuns(runs: (ClosedLoopResult | WalRun)[]): RunsSummary {
  const failures: Record<string, number> = {};
  for (const run of runs) {
    for (const [status, n] of Object.entries(run.statuses)) {
      if (status !== '200') failures[status] = (failures[status] ?? 0) + n;
    }
  }
  return {
    throughput: spread(runs.map((r) => r.throughput)),
    p50: spread(runs.map((r) => r.latency.p50)),
    p99: spread(runs.map((r) => r.latency.p99)),
    requests: runs.reduce((n, r) => n + r.requests, 0),
    failures,
    ...walSpread(runs),
  };
}

function walSpread(runs: (ClosedLoopResult | WalRun)[]): { walBytesPerRequest?: Spread } {
  const bytes = runs.map((r) => ('walBytesPerRequest' in r ? r.walBytesPerRequest : null));
  return bytes.length > 0 && bytes.every((b) => b !== null)
    ? { walBytesPerRequest: spread(bytes) }
    : {};
}

/** A unique key prefix per run, so that no run replays another's keys by accident. */
export function keyPrefix(label: string): string {
  return `${label}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}
