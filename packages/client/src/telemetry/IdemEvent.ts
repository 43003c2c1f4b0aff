import type { IdemReason } from '@idem/contract';
import type { FailureKind } from '../types/Failure.js';
import type { NoRetryReason, OperationKind } from '../types/RetryDecision.js';

/** Fields every idem event carries. */
export interface IdemCallInfo {
  /** The procedure path, such as `orders.create`. */
  path: string;
  operation: OperationKind;
  /** The call's idempotency key (idempotent mutations only): the same on every attempt. */
  idempotencyKey?: string;
}

/** Fields describing the attempt that just failed. */
export interface IdemFailureInfo {
  /** The attempt that failed, counting the first as 1. */
  attempt: number;
  /** That attempt's `X-Request-Id`: new on every attempt. */
  requestId: string;
  failure: FailureKind;
  /** HTTP status, when a response arrived. */
  status?: number;
  /** idem's reason, when idem raised the error. */
  reason?: IdemReason;
  /** The attempt's error, as the link received it. */
  error: unknown;
}

/** Emitted before every retry: idem never retries silently. */
export interface IdemRetryEvent extends IdemCallInfo, IdemFailureInfo {
  type: 'retry';
  /** Milliseconds idem sleeps before the next attempt (backoff, or `Retry-After` if longer). */
  delayMs: number;
  /** Milliseconds left of the overall deadline when the retry was decided. */
  remainingMs: number;
  /** Tokens left in the retry budget after paying for this retry. */
  budgetTokens: number;
}

/** Why idem stopped and let the error through. */
export type GiveUpReason =
  | NoRetryReason
  | 'attempts-exhausted'
  | 'budget-exhausted'
  | 'deadline-exceeded'
  | 'retry-after-exceeds-deadline';

/** Emitted once when a call ends in an error (except when the caller aborted it). */
export interface IdemGiveUpEvent extends IdemCallInfo, IdemFailureInfo {
  type: 'give-up';
  because: GiveUpReason;
  /** Milliseconds left of the overall deadline when idem gave up (may be <= 0). */
  remainingMs: number;
}

/** Any event of the link. */
export type IdemEvent = IdemRetryEvent | IdemGiveUpEvent;

/**
 * Where the link logs. `console` fits; for pino, adapt the argument order:
 * `{ info: (m, e) => log.info(e, m), warn: (m, e) => log.warn(e, m) }`.
 *
 * Retries are logged with `info`; give-ups with `warn`, except a first attempt's failure that is
 * simply not retryable (a 400, a 422): that is the caller's error to handle, not an incident.
 */
export interface IdemLogger {
  info(message: string, event: IdemEvent): void;
  warn(message: string, event: IdemEvent): void;
}
