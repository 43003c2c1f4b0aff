import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_BACKOFF_BASE_MS, DEFAULT_BACKOFF_CAP_MS, fullJitter } from './fullJitter.js';

const unit = fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true });

describe('fullJitter', () => {
  it('always sleeps within [0, min(cap, base * 2^retry)]', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 60_000 }),
        fc.integer({ min: 0, max: 600_000 }),
        fc.integer({ min: 0, max: 64 }),
        unit,
        (baseMs, capMs, retry, r) => {
          const delay = fullJitter({ baseMs, capMs })({
            retry,
            previousDelayMs: undefined,
            random: () => r,
          });
          return (
            Number.isInteger(delay) && delay >= 0 && delay <= Math.min(capMs, baseMs * 2 ** retry)
          );
        },
      ),
    );
  });

  it('defaults to base 500 ms and cap 10 s: 0..500 ms, then 0..1000 ms', () => {
    expect([DEFAULT_BACKOFF_BASE_MS, DEFAULT_BACKOFF_CAP_MS]).toEqual([500, 10_000]);
    const backoff = fullJitter();
    const almostOne = 1 - Number.EPSILON;
    expect(backoff({ retry: 0, previousDelayMs: undefined, random: () => almostOne })).toBe(499);
    expect(backoff({ retry: 1, previousDelayMs: 499, random: () => almostOne })).toBe(999);
    expect(backoff({ retry: 10, previousDelayMs: 999, random: () => almostOne })).toBe(9_999);
    expect(backoff({ retry: 0, previousDelayMs: undefined, random: () => 0 })).toBe(0);
  });

  it('refuses negative or non-finite options', () => {
    expect(() => fullJitter({ baseMs: -1 })).toThrow(RangeError);
    expect(() => fullJitter({ capMs: Number.POSITIVE_INFINITY })).toThrow(RangeError);
  });
});
