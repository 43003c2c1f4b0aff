import type { RecoveryStore } from '@idem/contract';
import { reject, storeUnavailable } from '../errors/idemErrors.js';
import type { IdemJob } from '../types/IdemJob.js';

/**
 * Refuses a new queued request when the queue is at its depth. The count and the claim are two
 * statements: concurrent requests may overshoot `maxDepth` by their number, never more.
 */
export async function refuseWhenQueueFull(job: IdemJob): Promise<void> {
  const queue = job.runtime.queue!;
  const store = job.runtime.store as RecoveryStore<unknown>;
  let depth: number;
  try {
    depth = await store.countPending([...job.runtime.acceptedPaths]);
    // A retry of a request already queued (or done) is answered by its record, never refused.
    if (depth >= queue.maxDepth && (await store.read(job.claim))) return;
  } catch (error) {
    throw storeUnavailable(error);
  }
  if (depth >= queue.maxDepth) {
    throw reject(
      'IDEMPOTENCY_QUEUE_FULL',
      `the queue of long-running work is full (${depth} waiting); retry with the same key after the delay`,
      { retryAfterMs: queue.retryAfterMs },
    );
  }
}
