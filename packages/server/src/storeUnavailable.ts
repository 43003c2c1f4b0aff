import type { TRPCError } from '@trpc/server';
import type { IdemJob } from './IdemJob.js';

/** Milliseconds a client is asked to wait after the store failed. */
const STORE_RETRY_AFTER_MS = 1000;

/**
 * 503 `IDEMPOTENCY_STORE_UNAVAILABLE`: the store failed before anything was committed, so the
 * request may be retried with the same key. The cause goes to the event hook, not the client.
 */
export function storeUnavailable(job: IdemJob, cause: unknown): TRPCError {
  job.runtime.emit({ ...job.event, type: 'store-error', operationId: null, error: cause });
  return job.reject(
    'IDEMPOTENCY_STORE_UNAVAILABLE',
    'the idempotency store is unavailable; nothing was executed, retry with the same key',
    { retryAfterMs: STORE_RETRY_AFTER_MS },
  );
}
