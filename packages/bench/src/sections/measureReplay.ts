import { FIRST_ATTEMPT, RETRY_ATTEMPT, type ClosedLoopResult } from '../jobs.js';
import { ratioSpread, type Spread } from '../stats.js';
import {
  jobTimeout,
  keyPrefix,
  loopJob,
  summarizeRuns,
  type RunsSummary,
  type SectionContext,
} from './SectionContext.js';

export interface ReplayLevel {
  concurrency: number;
  fresh: RunsSummary;
  replay: RunsSummary;
  /** replay / fresh p50 and p99, run by run. */
  p50Ratio: Spread;
  p99Ratio: Spread;
  /** Replay answers that carried `Idempotent-Replayed: true`, out of all measured replays. */
  replayedShare: number;
}

/**
 * A replayed request against a fresh one at the same concurrency: each run first sends fresh
 * keys for the profile's duration, then replays exactly those keys (cycling) for as long;
 * `judgedReps` runs, since a target judges their p50 ratio.
 */
export async function measureReplay(ctx: SectionContext): Promise<ReplayLevel[]> {
  const levels: ReplayLevel[] = [];
  for (const concurrency of ctx.profile.replayLevels) {
    const fresh: ClosedLoopResult[] = [];
    const replay: ClosedLoopResult[] = [];
    for (let rep = 0; rep < ctx.profile.judgedReps; rep++) {
      await ctx.server.post('reset');
      const prefix = keyPrefix(`r${concurrency}`);
      const first = await ctx.worker.run(
        loopJob(ctx, {
          path: 'idem.create',
          keys: { kind: 'fresh', prefix, attempt: FIRST_ATTEMPT },
          concurrency,
        }),
        jobTimeout(ctx),
      );
      const again = await ctx.worker.run(
        loopJob(ctx, {
          path: 'idem.create',
          keys: { kind: 'cycle', prefix, count: first.keysUsed, attempt: RETRY_ATTEMPT },
          concurrency,
        }),
        jobTimeout(ctx),
      );
      fresh.push(first);
      replay.push(again);
      ctx.log(
        `replay c=${concurrency} run ${rep + 1}: fresh p50 ${first.latency.p50.toFixed(2)} ms, replay p50 ${again.latency.p50.toFixed(2)} ms (${first.keysUsed} keys)`,
      );
    }
    const measuredReplays = replay.reduce((n, r) => n + r.requests, 0);
    levels.push({
      concurrency,
      fresh: summarizeRuns(fresh),
      replay: summarizeRuns(replay),
      p50Ratio: ratioSpread(
        replay.map((r) => r.latency.p50),
        fresh.map((r) => r.latency.p50),
      ),
      p99Ratio: ratioSpread(
        replay.map((r) => r.latency.p99),
        fresh.map((r) => r.latency.p99),
      ),
      replayedShare: replay.reduce((n, r) => n + r.replayed, 0) / measuredReplays,
    });
  }
  return levels;
}
