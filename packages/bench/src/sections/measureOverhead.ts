import { FIRST_ATTEMPT, type KeyPlan } from '../jobs.js';
import { ratioSpread, type Spread } from '../stats.js';
import {
  keyPrefix,
  loopJob,
  runMeasuringWal,
  summarizeRuns,
  type RunsSummary,
  type SectionContext,
  type WalRun,
} from './SectionContext.js';

export interface OverheadLevel {
  concurrency: number;
  plain: RunsSummary;
  /**
   * The idempotent mutation as idem's client sends a fresh key (`Idempotency-Attempt: 1`): the
   * path the targets judge. The server reads the key first for it as for any request
   * (`StatementsResult.firstAttemptReadsKey` says whether it did in this run).
   */
  idem: RunsSummary;
  /** The same from a client that sends no `Idempotency-Attempt` (a raw HTTP client). */
  idemRaw: RunsSummary;
  /** idem / plain throughput, run by run (each pair measured back to back). */
  throughputRatio: Spread;
  /** idemRaw / plain throughput, run by run. */
  rawThroughputRatio: Spread;
  /**
   * The floor: the plain mutation plus idem's record of it, written by idem's store as idem
   * writes it, without idem's middleware (`floor.create`).
   */
  floor: RunsSummary;
  /** floor / plain throughput, run by run: the most any idem could reach on this schema. */
  floorThroughputRatio: Spread;
  p50Ratio: Spread;
  p99Ratio: Spread;
}

/**
 * The idempotent mutation with a fresh key per request against the identical mutation without
 * idem, at each concurrency: as idem's client sends it (first attempt), and from a client that
 * sends no attempt header; and the floor (the plain mutation plus idem's record, no middleware).
 * All run on freshly truncated tables; the order rotates run by run, so that drift (autovacuum,
 * caches, a noisy neighbour) hits every variant alike.
 */
export async function measureOverhead(ctx: SectionContext): Promise<OverheadLevel[]> {
  type Variant = 'plain' | 'idem' | 'idemRaw' | 'floor';
  const variants: Variant[] = ['plain', 'idem', 'idemRaw', 'floor'];
  const runs = new Map<number, Record<Variant, WalRun[]>>();
  for (const c of ctx.profile.levels) runs.set(c, { plain: [], idem: [], idemRaw: [], floor: [] });
  for (let rep = 0; rep < ctx.profile.judgedReps; rep++) {
    for (const concurrency of ctx.profile.levels) {
      // The order rotates run by run, so that drift hits every variant alike.
      const order = variants.map((_, i) => variants[(i + rep) % variants.length]!);
      for (const variant of order) {
        await ctx.server.post('reset');
        const prefix = keyPrefix(`o${concurrency}`);
        const keys: KeyPlan =
          variant === 'idem'
            ? { kind: 'fresh', prefix, attempt: FIRST_ATTEMPT }
            : { kind: 'fresh', prefix };
        const path =
          variant === 'plain'
            ? 'plain.create'
            : variant === 'floor'
              ? 'floor.create'
              : 'idem.create';
        const result = await runMeasuringWal(ctx, loopJob(ctx, { path, keys, concurrency }));
        runs.get(concurrency)![variant].push(result);
        ctx.log(
          `overhead c=${concurrency} ${variant.padEnd(7)} run ${rep + 1}: ${result.throughput.toFixed(0)} req/s, p50 ${result.latency.p50.toFixed(2)} ms, p99 ${result.latency.p99.toFixed(2)} ms`,
        );
      }
    }
  }
  return ctx.profile.levels.map((concurrency) => {
    const { plain, idem, idemRaw, floor } = runs.get(concurrency)!;
    return {
      concurrency,
      plain: summarizeRuns(plain),
      idem: summarizeRuns(idem),
      idemRaw: summarizeRuns(idemRaw),
      floor: summarizeRuns(floor),
      floorThroughputRatio: ratioSpread(
        floor.map((r) => r.throughput),
        plain.map((r) => r.throughput),
      ),
      rawThroughputRatio: ratioSpread(
        idemRaw.map((r) => r.throughput),
        plain.map((r) => r.throughput),
      ),
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
