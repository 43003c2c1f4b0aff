import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decorrelatedJitter } from './decorrelatedJitter.js';

const unit = fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true });

describe('decorrelatedJitter', () => {
  it('stays within [min(base, cap), min(cap, 3 * previous)] along a whole call', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 60_000 }),
        fc.integer({ min: 0, max: 600_000 }),
        fc.array(unit, { minLength: 1, maxLength: 30 }),
        (baseMs, capMs, draws) => {
          const backoff = decorrelatedJitter({ baseMs, capMs });
          const floor = Math.min(baseMs, capMs);
          let previous: number | undefined;
          return draws.every((r, retry) => {
            const delay = backoff({ retry, previousDelayMs: previous, random: () => r });
            const upper = Math.min(capMs, 3 * Math.max(previous ?? baseMs, floor));
            const ok = Number.isInteger(delay) && delay >= floor && delay <= upper;
            previous = delay;
            return ok;
          });
        },
      ),
    );
  });

  it('starts from the base: the first sleep lies in [base, 3 * base]', () => {
    const backoff = decorrelatedJitter({ baseMs: 100, capMs: 10_000 });
    expect(backoff({ retry: 0, previousDelayMs: undefined, random: () => 0 })).toBe(100);
    expect(backoff({ retry: 0, previousDelayMs: undefined, random: () => 0.5 })).toBe(200);
  });
});
