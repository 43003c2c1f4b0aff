/**
 * The interval of a median the targets table prints, and the verdicts it marks unsettled: order
 * statistics whose coverage is known exactly (binomial with p = ½), on hand-made runs.
 */
import { describe, expect, it } from 'vitest';
import type { BenchReport } from '../src/BenchReport.js';
import { judgeTargets } from '../src/judgeTargets.js';
import type { OverheadLevel } from '../src/sections/measureOverhead.js';
import { medianInterval, ratioSpread, spread } from '../src/stats.js';

/** P(Binomial(n, ½) <= j), summed term by term. */
function binomialCdf(n: number, j: number): number {
  let sum = 0;
  let choose = 1;
  for (let i = 0; i <= j; i++) {
    sum += choose;
    choose = (choose * (n - i)) / (i + 1);
  }
  return sum / 2 ** n;
}

describe('medianInterval', () => {
  it('takes the 2nd and the 7th of eight runs, in any order (coverage 1 - 2 * 9/256)', () => {
    const interval = medianInterval([0.9, 0.5, 0.7, 0.3, 0.8, 0.6, 0.4, 0.2]);
    expect(interval).toEqual({ low: 0.3, high: 0.8, confidence: 1 - (2 * 9) / 256 });
  });

  it('takes the 5th and the 12th of sixteen runs', () => {
    const runs = Array.from({ length: 16 }, (_, i) => 16 - i); // 16, 15, ..., 1
    const interval = medianInterval(runs)!;
    expect([interval.low, interval.high]).toEqual([5, 12]);
    expect(interval.confidence).toBeCloseTo(1 - 2 * binomialCdf(16, 4), 12);
  });

  it('is the widest that still reaches the asked confidence, and no wider', () => {
    for (let n = 5; n <= 40; n++) {
      const runs = Array.from({ length: n }, (_, i) => i + 1);
      const interval = medianInterval(runs)!;
      const k = interval.low; // runs are 1..n: the k-th smallest is k
      expect(interval.high).toBe(n - k + 1);
      expect(interval.confidence).toBeCloseTo(1 - 2 * binomialCdf(n, k - 1), 12);
      expect(interval.confidence).toBeGreaterThanOrEqual(0.9);
      // One order statistic further in would fall below 0.9 (or cross the middle).
      if (k + 1 <= n / 2) expect(1 - 2 * binomialCdf(n, k)).toBeLessThan(0.9);
    }
  });

  it('is null with fewer than 5 runs: even the extremes hold the median with less than 0.9', () => {
    expect(medianInterval([1, 2, 3, 4])).toBeNull();
    expect(medianInterval([])).toBeNull();
    expect(medianInterval([1, 2, 3, 4, 5])).toEqual({ low: 1, high: 5, confidence: 1 - 2 / 32 });
  });
});

/** A report with only an overhead section at 8 connections, idem's runs against plain's. */
function overheadReport(idem: number[], plain: number[]): Omit<BenchReport, 'targets'> {
  const level = {
    concurrency: 8,
    throughputRatio: ratioSpread(idem, plain),
    rawThroughputRatio: ratioSpread(idem, plain),
    floorThroughputRatio: spread(idem.map(() => 0.9)),
  } as unknown as OverheadLevel;
  return { meta: { db: 'postgres' }, overhead: [level] } as unknown as Omit<BenchReport, 'targets'>;
}

describe('judgeTargets: throughput verdicts and their interval', () => {
  const plain = [100, 100, 100, 100, 100, 100, 100, 100];
  const target = (report: Omit<BenchReport, 'targets'>) =>
    judgeTargets(report).find((t) => t.id === 'overhead-throughput-c8')!;

  it('marks a verdict unsettled when the interval of its median holds the threshold', () => {
    const t = target(overheadReport([70, 72, 76, 78, 79, 83, 86, 90], plain));
    expect(t.met).toBe(false); // median 0.785
    expect(t.settled).toBe(false); // 0.72 .. 0.86 holds 0.8
    expect(t.value).toBe('0.79 [0.70-0.90], median in 0.72-0.86 (92%)');
  });

  it('leaves a verdict settled when the interval is on one side of the threshold', () => {
    const missed = target(overheadReport([60, 62, 64, 66, 68, 70, 72, 85], plain));
    expect([missed.met, missed.settled]).toEqual([false, true]);
    const met = target(overheadReport([82, 84, 86, 88, 90, 92, 94, 70], plain));
    expect([met.met, met.settled]).toEqual([true, true]);
  });

  it('says nothing of settling with fewer than 5 runs (the smoke bench)', () => {
    const t = target(overheadReport([70, 90], [100, 100]));
    expect(t.settled).toBeUndefined();
    expect(t.value).toBe('0.80 [0.70-0.90]');
    // The floor's line, reported and never judged, carries the interval the same way.
    const floor = judgeTargets(
      overheadReport(
        plain.map(() => 90),
        plain,
      ),
    ).find((r) => r.id === 'overhead-throughput-floor-c8')!;
    expect(floor.value).toBe('0.90 [0.90-0.90], median in 0.90-0.90 (92%)');
  });
});
