import { inProgress, reject, storeUnavailable } from '../errors/idemErrors.js';
import { TRPCError } from '@trpc/server';
import type { RecoveryRecord, RecoveryStore } from '@idem/contract';
import { answerRefusal } from './answerRefusal.js';
import { acceptedResponse } from '../replay/acceptedResponse.js';
import { answerExisting } from '../replay/answerExisting.js';
import { classifyHandlerFailure } from '../phases/classifyHandlerFailure.js';
import { claimWithTelemetry } from './claimWithTelemetry.js';
import { emitExecuted } from './emitExecuted.js';
import type { IdemJob, NextResult } from '../types/IdemJob.js';
import { PhasedExecution } from '../phases/PhasedExecution.js';
import { serializeFailure, storedFailureError } from '../replay/storedFailure.js';
import { storedOutput } from './storeResult.js';
import { refuseWhenQueueFull } from './refuseWhenQueueFull.js';

/**
 * External mode, for handlers with side effects outside the database (a charge, an email):
 *
 *   1. claim, committed at once: IN_PROGRESS, a lease, a stable operation id, version v, and the
 *      input the completer needs to resume;
 *   2. the handler runs outside any transaction, in steps (`ctx.idem.phase`, `ctx.idem.external`)
 *      whose recovery points commit as they finish; a retry or the completer starts the handler
 *      again and every committed step returns its recorded result instead of running again;
 *   3. the outcome is written only `WHERE id = ? AND version = v`: if the lease ran out and another
 *      worker took the key over (version v+1), this write matches no row and the result is
 *      discarded, never written over the new owner's.
 *
 * A duplicate arriving during step 2 sees IN_PROGRESS and gets 409 with Retry-After.
 */
export async function executeExternal(job: IdemJob): Promise<NextResult> {
  const store = job.runtime.store;
  const started = Date.now();
  let record: RecoveryRecord;
  let takeover: boolean;
  if (job.resume) {
    // The completer already took the record over (version bumped, lease ours).
    record = job.resume;
    takeover = true;
  } else {
    if (job.claim.pending) await refuseWhenQueueFull(job);
    let claim;
    try {
      claim = await claimWithTelemetry(job);
    } catch (error) {
      throw storeUnavailable(error);
    }
    if (claim.kind === 'busy') throw inProgress(job.runtime.inProgressRetryAfterMs);
    if (claim.kind === 'existing') {
      if (claim.reconciled) {
        // The poison cap: this claim's takeover handed the record to an operator.
        job.runtime.telemetry.reconciliation(claim.reconciled, job.claim.procedure);
      }
      return answerExisting(job, claim.record);
    }
    record = claim.record as RecoveryRecord;
    takeover = claim.takeover;
    // Queued: a worker of the pool runs it (workerPool.ts).
    if (record.state === 'PENDING') return acceptedResponse(job, record.operationId, 'PENDING');
  }
  if (record.erasedAt && record.steps === null && (record.irreversibleAt || record.recoveryPoint)) {
    // The user's data was erased after the work got somewhere: an external call may already have
    // happened, or a phase committed its writes, and the steps that would let a re-run skip them
    // are gone (an erasure clears them, and an owner running through it writes none back). A
    // re-run would repeat them blind; an operator decides instead.
    const reason = record.irreversibleAt ? 'erased_after_call' : 'erased_after_step';
    const fence = { id: record.id, version: record.version };
    if (await store.markUnsettled(fence, 'NEEDS_RECONCILIATION', reason)) {
      job.runtime.telemetry.reconciliation(reason, job.claim.procedure);
    }
    throw reject(
      'IDEMPOTENCY_OUTCOME_UNKNOWN',
      `this operation was erased after ${record.irreversibleAt ? 'an external call began' : 'a step of it committed'}; an operator must reconcile it`,
      { operationId: record.operationId },
    );
  }
  if (job.options.respond === 'accepted' && !job.resume) {
    // Long-running work: answer 202 now; the work goes on under the lease. If this process dies,
    // the completer resumes it from its recovery point. Its outcome reaches the event hook.
    // Its refusals (a lost record, an unknown outcome) are answered as a request's would be.
    void runClaimed(job, record, takeover, started).catch((error) => answerRefusal(job, error));
    return acceptedResponse(job, record.operationId, 'IN_PROGRESS');
  }
  return runClaimed(job, record, takeover, started);
}

/** Runs the handler as the record's owner and writes its outcome, fenced by version. */
async function runClaimed(
  job: IdemJob,
  record: RecoveryRecord,
  takeover: boolean,
  started: number,
): Promise<NextResult> {
  const store = job.runtime.store;
  const fence = { id: record.id, version: record.version };
  const phased = new PhasedExecution(job, store, fence, record.operationId, record);
  const result = await job.next({
    ...job.execution,
    operationId: record.operationId,
    executions: record.attempts,
    recoveryPoint: phased.recoveryPoint,
    phase: phased.phase.bind(phased),
    external: phased.external.bind(phased),
    heartbeat: phased.heartbeat.bind(phased),
  });
  if (phased.lost) {
    // Another worker owns the key now: whatever this attempt produced is discarded.
    emitExecuted(job, record.operationId, 'discarded', takeover, started);
    throw inProgress(job.runtime.inProgressRetryAfterMs, record.operationId);
  }
  const windows = {
    replayWindowMs: job.options.replayWindowMs,
    retentionMs: job.options.retentionMs,
  };

  // An output the serializer cannot write: the work is done and its steps are recorded, but it
  // can never be replayed. A 500 naming the fix, not a store outage that invites retries; the
  // record stays under its lease, and a takeover resumes from its steps (to `maxTakeovers`, then
  // an operator).
  const body = result.ok ? storedOutput(job, result.data) : undefined;
  if (body instanceof TRPCError) throw body;

  let written: boolean;
  let outcome: 'completed' | 'failed' | 'released' | 'unsettled';
  try {
    if (result.ok) {
      outcome = 'completed';
      written = await store.complete(fence, { status: 200, body: body!, ...windows });
    } else if (phased.unsettled) {
      // An external call may have happened: never release the key for a blind re-run.
      outcome = 'unsettled';
      written = await store.markUnsettled(fence, phased.unsettled, phased.unsettledReason);
      if (written && phased.unsettled === 'NEEDS_RECONCILIATION') {
        job.runtime.telemetry.reconciliation(
          phased.unsettledReason ?? 'no_lookup',
          job.claim.procedure,
        );
      }
    } else {
      const failure = classifyHandlerFailure(result.error, job.options.failures);
      if (failure.kind === 'deterministic') {
        outcome = 'failed';
        const body = serializeFailure(result.error);
        written = await store.fail(fence, { status: failure.status, body, ...windows });
      } else {
        outcome = 'released';
        // Kept the procedure's retention, so a retry within its windows resumes from the steps.
        written = await store.release(fence, windows);
      }
    }
  } catch (error) {
    // The side effect may have happened; the record stays IN_PROGRESS under its lease, and its
    // committed steps make the retry (or the completer) resume without repeating a call.
    throw storeUnavailable(error);
  }
  if (!written) {
    emitExecuted(job, record.operationId, 'discarded', takeover, started);
    throw inProgress(job.runtime.inProgressRetryAfterMs, record.operationId);
  }
  emitExecuted(job, record.operationId, outcome, takeover, started);
  if (outcome === 'failed' && !result.ok) {
    // Stored: answered exactly as every replay will be.
    return { ok: false, error: storedFailureError(result.error), marker: result.marker };
  }
  const unsettled = result.ok ? null : phased.unsettled;
  if (unsettled === 'NEEDS_RECONCILIATION') {
    throw reject(
      'IDEMPOTENCY_OUTCOME_UNKNOWN',
      'an external call timed out and cannot be looked up; an operator must reconcile it before anything runs again',
      { operationId: record.operationId },
    );
  }
  if (unsettled === 'OUTCOME_UNKNOWN') {
    // Retryable: the next attempt asks the remote system before it calls again.
    throw reject(
      'IDEMPOTENCY_OUTCOME_LOOKUP_PENDING',
      'an external call timed out; retry with the same key: it will be looked up first',
      { retryAfterMs: job.runtime.inProgressRetryAfterMs, operationId: record.operationId },
    );
  }
  return result;
}
