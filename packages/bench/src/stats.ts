/** Latency percentiles of one run, in milliseconds. */
export interface LatencySummary {
  count: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/** The median of several runs of one number, with its spread. */
export interface Spread {
  median: number;
  min: number;
  max: number;
  /** Every run's value, in run order. */
  runs: number[];
}

/** Nearest-rank percentile of ascending `sorted` values (`q` in [0, 1]); NaN when empty. */
export function percentile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank]!;
}

/** Summarizes latencies (milliseconds, any order). */
export function summarize(latencies: ArrayLike<number>): LatencySummary {
  const sorted = Float64Array.from(latencies).sort();
  let sum = 0;
  for (const value of sorted) sum += value;
  return {
    count: sorted.length,
    mean: sorted.length ? sum / sorted.length : Number.NaN,
    p50: percentile(sorted, 0.5),
    p90: percentile(sorted, 0.9),
    p99: percentile(sorted, 0.99),
    max: sorted.length ? sorted[sorted.length - 1]! : Number.NaN,
  };
}

/** Median, min and max of several runs. The median of an even count is the mean of the middle two. */
export function spread(runs: number[]): Spread {
  const sorted = [...runs].sort((a, b) => a - b);
  const n = sorted.length;
  const median =
    n === 0 ? Number.NaN : n % 2 ? sorted[(n - 1) / 2]! : (sorted[n / 2 - 1]! + sorted[n / 2]!) / 2;
  return { median, min: sorted[0] ?? Number.NaN, max: sorted[n - 1] ?? Number.NaN, runs };
}

/** Element-wise ratio of two equally long run lists (`a[i] / b[i]`), as a spread. */
export function ratioSpread(a: number[], b: number[]): Spread {
  return spread(a.map((value, i) => value / b[i]!));
}
