import type { FailureKind } from '../types/Failure.js';

/** Options of {@link RetryBudget}. Defaults are AWS SDK "standard" retry mode's quota. */
export interface RetryBudgetOptions {
  /**
   * Tokens in a full bucket; the bucket starts full. Defaults to 500: 100 ordinary retries (or
   * 50 after timeouts) in an outage before this client stops retrying altogether.
   */
  capacity?: number;
  /** Tokens one retry costs. Defaults to 5. */
  retryCost?: number;
  /**
   * Tokens one retry after a timeout costs. Defaults to 10: a timed-out request may still be
   * running on the server, so retrying it adds load exactly when the server is slow.
   */
  timeoutRetryCost?: number;
  /**
   * Tokens a call that succeeds at its first attempt puts back. Defaults to 1. A call that
   * succeeds after retrying puts back the cost of its last retry instead, so a retry that worked
   * is free. Once the bucket is empty this caps retries at one per 5 first-attempt successes
   * (20% extra load), however many callers share the client.
   */
  successRefund?: number;
}

/** Default {@link RetryBudgetOptions.capacity}. */
export const DEFAULT_BUDGET_CAPACITY = 500;
/** Default {@link RetryBudgetOptions.retryCost}. */
export const DEFAULT_RETRY_COST = 5;
/** Default {@link RetryBudgetOptions.timeoutRetryCost}. */
export const DEFAULT_TIMEOUT_RETRY_COST = 10;
/** Default {@link RetryBudgetOptions.successRefund}. */
export const DEFAULT_SUCCESS_REFUND = 1;

/**
 * A token bucket shared by every call of one client (or of every client given the same
 * instance): each retry spends tokens, successes put some back, and when a retry cannot be paid
 * for it does not happen. Per-call limits (3 attempts) bound one caller; the budget bounds the
 * fleet, so 100 callers in an outage do not each triple the load.
 *
 * First attempts are never charged: the budget limits retries, never traffic.
 */
export class RetryBudget {
  readonly capacity: number;
  readonly retryCost: number;
  readonly timeoutRetryCost: number;
  readonly successRefund: number;
  #tokens: number;

  constructor(options: RetryBudgetOptions = {}) {
    this.capacity = tokenCount('capacity', options.capacity ?? DEFAULT_BUDGET_CAPACITY);
    this.retryCost = tokenCount('retryCost', options.retryCost ?? DEFAULT_RETRY_COST);
    this.timeoutRetryCost = tokenCount(
      'timeoutRetryCost',
      options.timeoutRetryCost ?? DEFAULT_TIMEOUT_RETRY_COST,
    );
    this.successRefund = tokenCount(
      'successRefund',
      options.successRefund ?? DEFAULT_SUCCESS_REFUND,
    );
    this.#tokens = this.capacity;
  }

  /** Tokens left, in [0, capacity]. */
  get tokens(): number {
    return this.#tokens;
  }

  /** What a retry after `failure` costs. */
  costOf(failure: FailureKind): number {
    return failure === 'timeout' ? this.timeoutRetryCost : this.retryCost;
  }

  /**
   * Pays for one retry after `failure`. Returns the tokens spent, or `undefined` (and spends
   * nothing) when the bucket cannot pay: then the call gives up.
   */
  tryAcquire(failure: FailureKind): number | undefined {
    const cost = this.costOf(failure);
    if (cost > this.#tokens) return undefined;
    this.#tokens -= cost;
    return cost;
  }

  /**
   * A call succeeded. `lastRetryCost` is what its last retry cost (0 if it needed none): that is
   * refunded, or {@link successRefund} when 0. Never fills past capacity.
   */
  recordSuccess(lastRetryCost: number): void {
    const refund = lastRetryCost > 0 ? lastRetryCost : this.successRefund;
    this.#tokens = Math.min(this.capacity, this.#tokens + refund);
  }
}

function tokenCount(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 0) {
    throw new RangeError(`${name} must be an integer >= 0, got ${value}`);
  }
  return value;
}
