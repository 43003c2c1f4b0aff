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

/** Where the median of the runs' population lies, from the runs alone (see {@link medianInterval}). */
export interface MedianInterval {
  low: number;
  high: number;
  /** The probability that the interval holds the median: 0.9 or more, exactly as computed. */
  confidence: number;
}

/**
 * A distribution-free interval for the median of what `runs` sample: the k-th smallest and the
 * k-th largest run, with the largest k whose interval holds the median with probability at least
 * `atLeast` (any continuous distribution, independent runs: each run falls below the median with
 * probability ½, so the count below is binomial). Null with fewer than 5 runs, where even the
 * smallest and the largest run hold it with less than 0.9. Eight runs give the 2nd and the 7th
 * (0.93); sixteen, the 5th and the 12th (0.92).
 */
export function medianInterval(runs: number[], atLeast = 0.9): MedianInterval | null {
  const n = runs.length;
  const sorted = [...runs].sort((a, b) => a - b);
  let best: MedianInterval | null = null;
  // The k-th smallest run lies above the median only when fewer than k runs fall below it:
  // P(Binomial(n, 1/2) <= k - 1), the same for the k-th largest. `below` is that sum for this k.
  let term = 1 / 2 ** n; // C(n, 0) / 2^n
  let below = 0;
  for (let k = 1; k <= n / 2; k++) {
    below += term;
    term = (term * (n - (k - 1))) / k; // C(n, k) / 2^n
    const confidence = 1 - 2 * below;
    if (confidence < atLeast) break;
    best = { low: sorted[k - 1]!, high: sorted[n - k]!, confidence };
  }
  return best;
}
