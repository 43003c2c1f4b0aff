import type { ClosedLoopResult } from '../jobs.js';
import { ratioSpread, type Spread } from '../stats.js';
import {
  jobTimeout,
  keyPrefix,
  loopJob,
  summarizeRuns,
  type RunsSummary,
  type SectionContext,
} from './SectionContext.js';

export interface OverheadLevel {
  concurrency: number;
  plain: RunsSummary;
  idem: RunsSummary;
  /** idem / plain throughput, run by run (each pair measured back to back). */
  throughputRatio: Spread;
  p50Ratio: Spread;
  p99Ratio: Spread;
}

/**
 * The idempotent mutation with a fresh key per request against the identical mutation without
 * idem, at each concurrency. Both run on freshly truncated tables; the order of the two
 * alternates run by run, so that drift (autovacuum, caches, a noisy neighbour) hits both alike.
 */
export async function measureOverhead(ctx: SectionContext): Promise<OverheadLevel[]> {
  const runs = new Map<number, { plain: ClosedLoopResult[]; idem: ClosedLoopResult[] }>();
  for (const c of ctx.profile.levels) runs.set(c, { plain: [], idem: [] });
  for (let rep = 0; rep < ctx.profile.reps; rep++) {
    for (const concurrency of ctx.profile.levels) {
      const order = rep % 2 === 0 ? (['plain', 'idem'] as const) : (['idem', 'plain'] as const);
      for (const variant of order) {
        await ctx.server.post('reset');
        const result = await ctx.worker.run(
          loopJob(ctx, {
            path: `${variant}.create`,
            keys: { kind: 'fresh', prefix: keyPrefix(`o${concurrency}`) },
            concurrency,
          }),
          jobTimeout(ctx),
        );
        runs.get(concurrency)![variant].push(result);
        ctx.log(
          `overhead c=${concurrency} ${variant.padEnd(5)} run ${rep + 1}: ${result.throughput.toFixed(0)} req/s, p50 ${result.latency.p50.toFixed(2)} ms, p99 ${result.latency.p99.toFixed(2)} ms`,
        );
      }
    }
  }
  return ctx.profile.levels.map((concurrency) => {
    const { plain, idem } = runs.get(concurrency)!;
    return {
      concurrency,
      plain: summarizeRuns(plain),
      idem: summarizeRuns(idem),
      throughputRatio: ratioSpread(
        idem.map((r) => r.throughput),
        plain.map((r) => r.throughput),
      ),
      p50Ratio: ratioSpread(
        idem.map((r) => r.latency.p50),
        plain.map((r) => r.latency.p50),
      ),
      p99Ratio: ratioSpread(
        idem.map((r) => r.latency.p99),
        plain.map((r) => r.latency.p99),
      ),
    };
  });
}
