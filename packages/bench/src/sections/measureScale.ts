import type { ReaperRun } from '../benchControl.js';
import type { ClosedLoopResult } from '../jobs.js';
import { createBenchDatabase } from '../benchDatabase.js';
import { startServer, type BenchServer } from '../processes.js';
import { percentile, ratioSpread, spread, type Spread } from '../stats.js';
import {
  keyPrefix,
  loopJob,
  runMeasuringWal,
  summarizeRuns,
  type RunsSummary,
  type SectionContext,
} from './SectionContext.js';

export interface ReapRun {
  deleted: number;
  rowsPerSecond: number;
  windowMs: number;
  drained: boolean;
  /** Foreground requests that started while the reaper ran. */
  foregroundRequests: number;
  p50: number;
  p99: number;
  /** p99 of the run without reaping just before, at the same table size. */
  p99Without: number;
}

export interface ScaleResult {
  rows: number;
  expired: number;
  concurrency: number;
  seedMs: { insert: number; vacuumAnalyze: number };
  empty: RunsSummary;
  full: RunsSummary;
  /** Fresh-claim throughput on the full table / on the empty one, run by run. */
  throughputRatio: Spread;
  reaper:
    | { skipped: string }
    | {
        runs: ReapRun[];
        rowsPerSecond: Spread;
        /** p99 during reaping / p99 without, run by run (runs with foreground requests only). */
        p99Ratio: Spread;
      };
}

/**
 * The key table at scale, on two server processes started for this section: one bulk-loads its
 * table with `generate_series` (a share of the rows already past `purge_after` by the database
 * clock) and VACUUM ANALYZEs it; the other keeps an empty table (its own database, or its own
 * PGlite), truncated before each run.
 * Each of `judgedReps` runs (two targets judge this section) measures fresh claims on the empty
 * table and on the full one, back to back in alternating order, then the full one while the reaper
 * (`createReaper({ store })` with its defaults: batches of 500, each followed by a pause as long
 * as it took; its runs back to back, in the server process, on its pool) deletes expired rows.
 * The foreground p99 with reaping counts the requests that started while the reaper ran. After
 * each reaper run the rows it deleted are loaded again (and the table VACUUM ANALYZEd), so every
 * run sees the same table.
 */
export async function measureScale(ctx: SectionContext): Promise<ScaleResult> {
  const { scale } = ctx.profile;
  const rows = scale.rows[ctx.options.db];
  const expired = Math.round(rows * scale.expiredShare[ctx.options.db]);
  const fresh = (server: BenchServer, label: string, keepSamples = false) =>
    runMeasuringWal(
      ctx,
      loopJob(ctx, {
        url: server.url,
        path: 'idem.create',
        keys: { kind: 'fresh', prefix: keyPrefix(label) },
        concurrency: scale.concurrency,
        keepSamples,
      }),
      server,
    );

  await using emptyDatabase = ctx.database
    ? await createBenchDatabase(ctx.options.serverUrl!)
    : null;
  await using emptyServer = await startServer(
    emptyDatabase
      ? { ...ctx.serverEnv, DATABASE_URL: emptyDatabase.url, BENCH_SETUP: '1' }
      : ctx.serverEnv,
  );

  // The full table's server is new too (on the same database), not the one every section before
  // this ran in: otherwise the comparison would weigh that process's age (its heap, and on PGlite
  // the memory and caches of its database) against a fresh one, besides the rows. On PGlite a
  // full run measured 0.76 with the old server and 0.98 with the section run alone.
  await using fullServer = await startServer(ctx.serverEnv);

  await fullServer.post('reset');
  ctx.log(`scale: loading ${rows} rows (${expired} expired) with generate_series ...`);
  const seed = await fullServer.post<{ insertMs: number; vacuumMs: number }>('seed', {
    live: rows - expired,
    expired,
    offset: 0,
  });
  ctx.log(
    `scale: loaded in ${(seed.insertMs / 1000).toFixed(1)} s, VACUUM ANALYZE ${(seed.vacuumMs / 1000).toFixed(1)} s`,
  );
  let offset = rows;

  // Both servers are new: warm them alike (not recorded).
  await fresh(emptyServer, 'warm');
  await fresh(fullServer, 'warm');

  const empty: ClosedLoopResult[] = [];
  const full: ClosedLoopResult[] = [];
  const reaps: ReapRun[] = [];
  let skipped: string | null = null;
  const { judgedReps } = ctx.profile;
  for (let rep = 0; rep < judgedReps; rep++) {
    // The order alternates run by run, so that drift (a checkpoint, autovacuum after a reseed, a
    // noisy neighbour) hits both tables alike.
    const emptyFirst = rep % 2 === 0;
    let without: ClosedLoopResult | undefined;
    for (const table of emptyFirst ? (['empty', 'full'] as const) : (['full', 'empty'] as const)) {
      if (table === 'empty') {
        await emptyServer.post('reset');
        empty.push(await fresh(emptyServer, 'empty'));
      } else {
        without = await fresh(fullServer, 'full');
        full.push(without);
      }
    }
    if (!without) throw new Error('unreachable: every run measures the full table');
    ctx.log(
      `scale run ${rep + 1}: empty table ${empty.at(-1)!.throughput.toFixed(0)} req/s, ${rows} rows ${without.throughput.toFixed(0)} req/s (p99 ${without.latency.p99.toFixed(2)} ms)`,
    );
    if (skipped !== null) continue;

    const foreground = fresh(fullServer, 'reap', true);
    await new Promise((resolve) => setTimeout(resolve, ctx.profile.warmupMs));
    try {
      await fullServer.post('reaper/start');
    } catch (error) {
      skipped = `the reaper could not start: ${error instanceof Error ? error.message : String(error)}`;
      await foreground;
      continue;
    }
    const withReaper = await foreground;
    const run = await fullServer.post<ReaperRun>('reaper/stop');
    if (run.errors.length > 0) throw new Error(`reaper failed: ${run.errors[0]}`);
    const endedAt = run.endedAt ?? Date.now();
    const during = withReaper
      .samples!.filter(([start]) => start >= run.startedAt && start <= endedAt)
      .map(([, latency]) => latency)
      .sort((a, b) => a - b);
    const windowMs = endedAt - run.startedAt;
    reaps.push({
      deleted: run.deleted,
      rowsPerSecond: (run.deleted * 1000) / windowMs,
      windowMs,
      drained: run.drained,
      foregroundRequests: during.length,
      p50: percentile(during, 0.5),
      p99: percentile(during, 0.99),
      p99Without: without.latency.p99,
    });
    ctx.log(
      `scale reaper run ${rep + 1}: ${run.deleted} rows in ${windowMs} ms${run.drained ? ' (drained)' : ''}, foreground p99 ${reaps.at(-1)!.p99.toFixed(2)} ms vs ${without.latency.p99.toFixed(2)} ms without`,
    );
    // Put back what was reaped, so the next run starts from the same table.
    await fullServer.post('seed', { live: 0, expired: run.deleted, offset });
    offset += run.deleted;
  }
  const emptySummary = summarizeRuns(empty);
  const fullSummary = summarizeRuns(full);
  const throughputRatio = ratioSpread(
    full.map((r) => r.throughput),
    empty.map((r) => r.throughput),
  );
  return {
    rows,
    expired,
    concurrency: scale.concurrency,
    seedMs: { insert: seed.insertMs, vacuumAnalyze: seed.vacuumMs },
    empty: emptySummary,
    full: fullSummary,
    throughputRatio,
    reaper:
      skipped !== null
        ? { skipped }
        : {
            runs: reaps,
            rowsPerSecond: spread(reaps.map((r) => r.rowsPerSecond)),
            // Runs whose reaper drained before any foreground request started have no p99.
            p99Ratio: spread(
              reaps.filter((r) => r.foregroundRequests > 0).map((r) => r.p99 / r.p99Without),
            ),
          },
  };
}
