import { answerExisting, inProgress } from './answerExisting.js';
import { classifyFailure } from './classifyFailure.js';
import { emitExecuted } from './emitExecuted.js';
import type { IdemJob, NextResult } from './IdemJob.js';
import { storeUnavailable } from './storeUnavailable.js';
import { serializeFailure } from './storedFailure.js';

/**
 * External mode, for handlers with side effects outside the database (a charge, an email):
 *
 *   1. claim, committed at once: IN_PROGRESS, a lease, a stable operation id, version v;
 *   2. the handler runs outside any transaction (hand `ctx.idem.operationId` downstream);
 *   3. the outcome is written only `WHERE id = ? AND version = v`: if the lease ran out and another
 *      worker took the key over (version v+1), this write matches no row and the result is
 *      discarded, never written over the new owner's.
 *
 * A duplicate arriving during step 2 sees IN_PROGRESS and gets 409 with Retry-After.
 */
export async function executeExternal(job: IdemJob): Promise<NextResult> {
  const { store } = job.runtime;
  const started = Date.now();
  let claim;
  try {
    claim = await store.claim(job.claim);
  } catch (error) {
    throw storeUnavailable(job, error);
  }
  if (claim.kind === 'busy') throw inProgress(job);
  if (claim.kind === 'existing') return answerExisting(job, claim.record);

  const { record } = claim;
  const fence = { id: record.id, version: record.version };
  const result = await job.next({
    ...job.execution,
    operationId: record.operationId,
    executions: record.attempts,
  });
  const windows = {
    replayWindowMs: job.options.replayWindowMs,
    retentionMs: job.options.retentionMs,
  };

  let written: boolean;
  let outcome: 'completed' | 'failed' | 'released';
  try {
    if (result.ok) {
      outcome = 'completed';
      const body = job.runtime.serializer.serialize(result.data);
      written = await store.complete(fence, { status: 200, body, ...windows });
    } else {
      const failure = classifyFailure(result.error, job.options.failures);
      if (failure.kind === 'deterministic') {
        outcome = 'failed';
        const body = serializeFailure(result.error);
        written = await store.fail(fence, { status: failure.status, body, ...windows });
      } else {
        outcome = 'released';
        written = await store.release(fence);
      }
    }
  } catch (error) {
    // The side effect may have happened; the record stays IN_PROGRESS under its lease, so no
    // duplicate runs before the lease ends. Phases (recovery points) make the retry safe after.
    throw storeUnavailable(job, error);
  }
  if (!written) {
    // Our lease ran out and another worker owns the key now: our outcome is discarded.
    emitExecuted(job, record.operationId, 'discarded', claim.takeover, started);
    throw inProgress(job, record.operationId);
  }
  emitExecuted(job, record.operationId, outcome, claim.takeover, started);
  return result;
}
