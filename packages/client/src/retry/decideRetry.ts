import type { Failure, FailureKind } from '../types/Failure.js';
import type { OperationKind, RetryDecision } from '../types/RetryDecision.js';

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
