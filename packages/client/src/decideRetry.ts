import type { Failure, FailureKind } from './classifyFailure.js';

/**
 * What is being called, as far as retrying goes.
 *
 * - `idempotent-mutation`: a mutation the server declares idempotent; it travels with a key.
 * - `mutation`: any other mutation. Never sent again once it may have reached the server.
 * - `query`: safe to repeat.
 */
export type OperationKind = 'idempotent-mutation' | 'mutation' | 'query';

/** Why a failure is not retried. */
export type NoRetryReason =
  /** The failure is not on the retry list (4xx, 422 key reused, auth, a bug, ...). */
  | 'not-retryable'
  /** Retryable in general, but the mutation has no key and may have reached the server. */
  | 'unsafe';

/** The verdict of {@link decideRetry}. */
export type RetryDecision = { retry: true } | { retry: false; because: NoRetryReason };

/** The failures worth another attempt, for every kind of operation that may be repeated. */
const RETRYABLE: ReadonlySet<FailureKind> = new Set<FailureKind>([
  'http-429',
  'http-502',
  'http-503',
  'http-504',
  'in-progress',
  'timeout',
  'connection-refused',
  'connection-lost',
]);

/**
 * Decides whether one failure may be retried, before budget and deadline have their say.
 * `retryOn500` adds `http-500` to the list.
 */
export function decideRetry(
  failure: Failure,
  operation: OperationKind,
  options: { retryOn500: boolean },
): RetryDecision {
  const listed = RETRYABLE.has(failure.kind) || (options.retryOn500 && failure.kind === 'http-500');
  if (!listed) return { retry: false, because: 'not-retryable' };
  if (operation === 'mutation' && failure.mayHaveReachedServer) {
    return { retry: false, because: 'unsafe' };
  }
  return { retry: true };
}
