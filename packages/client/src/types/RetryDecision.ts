/**
 * What is being called, as far as retrying goes.
 *
 * - `idempotent-mutation`: a mutation the server declares idempotent; it travels with a key.
 * - `retry-safe-mutation`: a mutation the server marks safe to retry by nature (`retrySafe()`);
 *   no key, retried like an idempotent one.
 * - `mutation`: any other mutation (a `retryUnsafe` one included). Never sent again once it may
 *   have reached the server.
 * - `query`: safe to repeat.
 */
export type OperationKind = 'idempotent-mutation' | 'retry-safe-mutation' | 'mutation' | 'query';

/** Why a failure is not retried. */
export type NoRetryReason =
  /** The failure is not on the retry list (4xx, 422 key reused, auth, a bug, ...). */
  | 'not-retryable'
  /** Retryable in general, but the mutation has no key and may have reached the server. */
  | 'unsafe';

/** The verdict of {@link decideRetry}. */
export type RetryDecision = { retry: true } | { retry: false; because: NoRetryReason };
