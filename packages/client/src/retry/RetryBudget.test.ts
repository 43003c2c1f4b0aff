import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { FailureKind } from '../types/Failure.js';
import { RetryBudget } from './RetryBudget.js';

const failureKinds: FailureKind[] = ['http-503', 'timeout', 'connection-lost', 'in-progress'];
const step = fc.oneof(
  fc.record({ op: fc.constant('retry' as const), failure: fc.constantFrom(...failureKinds) }),
  fc.record({ op: fc.constant('success' as const), lastRetryCost: fc.constantFrom(0, 5, 10) }),
);

describe('RetryBudget', () => {
  it('never goes below 0 or above capacity, and only pays what it has', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1000 }),
        fc.integer({ min: 0, max: 50 }),
        fc.integer({ min: 0, max: 50 }),
        fc.integer({ min: 0, max: 10 }),
        fc.array(step, { maxLength: 300 }),
        (capacity, retryCost, timeoutRetryCost, successRefund, steps) => {
          const budget = new RetryBudget({ capacity, retryCost, timeoutRetryCost, successRefund });
          for (const s of steps) {
            const before = budget.tokens;
            if (s.op === 'retry') {
              const paid = budget.tryAcquire(s.failure);
              const cost = budget.costOf(s.failure);
              if (cost > before && paid !== undefined) return false;
              if (paid !== undefined && (paid !== cost || budget.tokens !== before - cost))
                return false;
              if (paid === undefined && budget.tokens !== before) return false;
            } else {
              budget.recordSuccess(s.lastRetryCost);
              const refund = s.lastRetryCost > 0 ? s.lastRetryCost : successRefund;
              if (budget.tokens !== Math.min(capacity, before + refund)) return false;
            }
            if (budget.tokens < 0 || budget.tokens > capacity) return false;
          }
          return true;
        },
      ),
    );
  });

  it('with the defaults, an outage stops retries after 100 (or 50 after timeouts)', () => {
    const budget = new RetryBudget();
    let retries = 0;
    while (budget.tryAcquire('http-503') !== undefined) retries++;
    expect(retries).toBe(100);
    expect(budget.tokens).toBe(0);

    const timeouts = new RetryBudget();
    let timeoutRetries = 0;
    while (timeouts.tryAcquire('timeout') !== undefined) timeoutRetries++;
    expect(timeoutRetries).toBe(50);
  });

  it('refills from successes: 5 first-attempt successes pay for one retry', () => {
    const budget = new RetryBudget({ capacity: 500 });
    while (budget.tryAcquire('http-503') !== undefined);
    for (let i = 0; i < 4; i++) budget.recordSuccess(0);
    expect(budget.tryAcquire('http-503')).toBeUndefined();
    budget.recordSuccess(0);
    expect(budget.tryAcquire('http-503')).toBe(5);
  });

  it('a retry that succeeds gets its cost back', () => {
    const budget = new RetryBudget();
    expect(budget.tryAcquire('timeout')).toBe(10);
    budget.recordSuccess(10);
    expect(budget.tokens).toBe(500);
  });

  it('refuses nonsense', () => {
    expect(() => new RetryBudget({ capacity: -1 })).toThrow(RangeError);
    expect(() => new RetryBudget({ retryCost: 1.5 })).toThrow(RangeError);
  });
});
