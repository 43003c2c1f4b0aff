import type { Backoff } from './Backoff.js';
import { nonNegativeMs } from '../assertOptions.js';
import { DEFAULT_BACKOFF_BASE_MS, DEFAULT_BACKOFF_CAP_MS } from './fullJitter.js';

/** Options of {@link decorrelatedJitter}. */
export interface DecorrelatedJitterOptions {
  /** Shortest sleep and the first retry's starting point, in milliseconds. Defaults to 500 ms. */
  baseMs?: number;
  /** Ceiling of any sleep, in milliseconds. Defaults to 10 000 ms. */
  capMs?: number;
}

/**
 * Decorrelated jitter (Brooker): `sleep = min(cap, random(base, previous * 3))`, starting from
 * `previous = base`. Every sleep lies in `[min(base, cap), min(cap, 3 * previous)]`.
 *
 * Finishes sooner than {@link fullJitter} for slightly more total work: prefer it for user-facing
 * calls under a tight deadline, where time to success matters more than aggregate load.
 */
export function decorrelatedJitter(options: DecorrelatedJitterOptions = {}): Backoff {
  const baseMs = options.baseMs ?? DEFAULT_BACKOFF_BASE_MS;
  const capMs = options.capMs ?? DEFAULT_BACKOFF_CAP_MS;
  nonNegativeMs('baseMs', baseMs);
  nonNegativeMs('capMs', capMs);
  const floor = Math.min(baseMs, capMs);
  return ({ previousDelayMs, random }) => {
    const previous = Math.max(previousDelayMs ?? baseMs, floor);
    const upper = Math.min(capMs, previous * 3);
    return Math.floor(floor + random() * (upper - floor));
  };
}
