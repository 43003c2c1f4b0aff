import { nonNegativeMs } from '../assertOptions.js';
import type { Backoff } from './Backoff.js';

/** Options of {@link fullJitter}. */
export interface FullJitterOptions {
  /**
   * Ceiling of the first retry's sleep, in milliseconds; it doubles for each later retry.
   * Defaults to 500 ms (Stripe's initial network-retry delay): with the default 3 attempts, the
   * two sleeps are at most 500 ms and 1 s, 750 ms in total on average.
   */
  baseMs?: number;
  /**
   * Ceiling of any sleep, in milliseconds. Defaults to 10 000 ms (a third of the default 30 s
   * deadline); only reached when `maxAttempts` is raised to 6 or more.
   */
  capMs?: number;
}

/** Default {@link FullJitterOptions.baseMs}. */
export const DEFAULT_BACKOFF_BASE_MS = 500;
/** Default {@link FullJitterOptions.capMs}. */
export const DEFAULT_BACKOFF_CAP_MS = 10_000;

/**
 * Full jitter (Marc Brooker, AWS Architecture Blog, "Exponential Backoff And Jitter"):
 * `sleep = random(0, min(cap, base * 2^retry))`, `retry` counting from 0.
 *
 * The default: of the jittered backoffs it does the least total work and puts the least load on
 * a recovering server, at the price of a slightly longer time to success than
 * {@link decorrelatedJitter}.
 */
export function fullJitter(options: FullJitterOptions = {}): Backoff {
  const baseMs = options.baseMs ?? DEFAULT_BACKOFF_BASE_MS;
  const capMs = options.capMs ?? DEFAULT_BACKOFF_CAP_MS;
  nonNegativeMs('baseMs', baseMs);
  nonNegativeMs('capMs', capMs);
  return ({ retry, random }) => {
    const ceiling = Math.min(capMs, baseMs * 2 ** retry);
    return Math.floor(random() * ceiling);
  };
}
