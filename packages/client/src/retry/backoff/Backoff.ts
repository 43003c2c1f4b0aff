/** What a {@link Backoff} is told when it picks the sleep before one retry. */
export interface BackoffInput {
  /** 0 before the first retry (the second attempt), 1 before the second retry, and so on. */
  retry: number;
  /** The sleep this call chose before its previous retry; `undefined` before the first retry. */
  previousDelayMs: number | undefined;
  /** Uniform in [0, 1): the link's random source, injectable for tests. */
  random: () => number;
}

/**
 * Picks how many milliseconds to sleep before a retry. Pure: everything it may depend on arrives
 * in {@link BackoffInput}. A server's `Retry-After` is applied on top (the loop sleeps the longer
 * of the two), and the overall deadline bounds both.
 */
export type Backoff = (input: BackoffInput) => number;
