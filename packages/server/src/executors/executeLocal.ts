import { inProgress, storeUnavailable } from '../errors/idemErrors.js';
import type { TRPCError } from '@trpc/server';
import { trpcMiddlewareMarker } from '../trpc/trpcInternals.js';
import type { IdempotencyRecord } from '@idem/contract';
import { answerExisting } from '../replay/answerExisting.js';
import { classifyHandlerFailure } from '../phases/classifyHandlerFailure.js';
import { claimWithTelemetry } from './claimWithTelemetry.js';
import { emitExecuted } from './emitExecuted.js';
import { executeAtCommit } from './executeAtCommit.js';
import type { IdemJob, NextResult } from '../types/IdemJob.js';
import { serializeFailure, storedFailureError } from '../replay/storedFailure.js';
import { storedOutput } from './storeResult.js';

/** Thrown inside the transaction to roll it back; never leaves this module. */
class Rollback {
  constructor(readonly reason: 'busy' | 'handler-failed') {}
}

/**
 * Local mode: the key, the handler's writes (through `ctx.idem.tx`) and the outcome commit in ONE
 * transaction, so there is never a committed key without its result or the reverse. The key is
 * taken at commit by default (executeAtCommit.ts), or first (`claim: 'first'`, below).
 */
export function executeLocal(job: IdemJob): Promise<NextResult> {
  return job.options.claim === 'first' || job.resume !== null
    ? executeClaimFirst(job)
    : executeAtCommit(job, executeClaimFirst);
}

/**
 * Local mode, the key claimed first (`claim: 'first'`), and every key the at-commit path does not
 * settle itself (work in progress, a released key, a closed replay window).
 *
 * Timeline of two racers A and B with the same key:
 *   A: BEGIN; INSERT claim (row locked, uncommitted) ... handler ... UPDATE completed; COMMIT
 *   B: BEGIN; INSERT claim -> waits on A's uncommitted row in the unique index, at most
 *      `lockTimeoutMs`:
 *        A commits first     -> B sees the conflict, reads A's COMPLETED row -> replay
 *        A rolls back first  -> B's insert succeeds -> B runs the procedure (A left nothing)
 *        the wait runs out   -> B rolls back -> 409 IDEMPOTENCY_REQUEST_IN_PROGRESS
 */
async function executeClaimFirst(job: IdemJob): Promise<NextResult> {
  const { store } = job.runtime;
  const started = Date.now();
  let handlerError: TRPCError | undefined;
  let takeover = false;
  let outcome:
    { kind: 'executed'; result: NextResult } | { kind: 'existing'; record: IdempotencyRecord };
  try {
    outcome = await store.transaction(async (tx) => {
      const claim = await claimWithTelemetry(job, { lockTimeoutMs: job.options.lockTimeoutMs }, tx);
      if (claim.kind === 'busy') throw new Rollback('busy');
      if (claim.kind === 'existing') return { kind: 'existing', record: claim.record } as const;
      takeover = claim.takeover;
      const { record } = claim;
      const result = await job.next({
        ...job.execution,
        operationId: record.operationId,
        executions: record.attempts,
        tx,
      });
      if (!result.ok) {
        handlerError = result.error;
        throw new Rollback('handler-failed');
      }
      const body = storedOutput(job, result.data);
      if (typeof body !== 'string') {
        handlerError = body;
        throw new Rollback('handler-failed');
      }
      const stored = await store.complete(
        { id: record.id, version: record.version },
        {
          status: 200,
          body,
          replayWindowMs: job.options.replayWindowMs,
          retentionMs: job.options.retentionMs,
        },
        tx,
      );
      // Inside the claiming transaction nobody else can take the row over.
      if (!stored) throw new Error(`idem: record ${record.id} changed under its own transaction`);
      emitExecuted(job, record.operationId, 'completed', takeover, started);
      return { kind: 'executed', result } as const;
    });
  } catch (error) {
    if (error instanceof Rollback && error.reason === 'busy')
      throw inProgress(job.runtime.inProgressRetryAfterMs);
    if (error instanceof Rollback && handlerError) return recordFailure(job, handlerError, started);
    throw storeUnavailable(error);
  }
  return outcome.kind === 'executed' ? outcome.result : await answerExisting(job, outcome.record);
}

/**
 * The handler failed and its transaction rolled back. A deterministic failure is stored for replay
 * in a short transaction of its own; a transient one leaves nothing, so a retry runs again.
 */
async function recordFailure(job: IdemJob, error: TRPCError, started: number): Promise<NextResult> {
  const failure = classifyHandlerFailure(error, job.options.failures);
  const failed: NextResult = { ok: false, error, marker: trpcMiddlewareMarker };
  if (failure.kind === 'transient') {
    emitExecuted(job, null, 'released', false, started);
    return failed;
  }
  const { store } = job.runtime;
  let stored = false;
  try {
    await store.transaction(async (tx) => {
      const claim = await claimWithTelemetry(job, { lockTimeoutMs: job.options.lockTimeoutMs }, tx);
      // Someone else claimed the key since our rollback: their outcome stands, ours is not stored.
      if (claim.kind !== 'claimed') return;
      await store.fail(
        { id: claim.record.id, version: claim.record.version },
        {
          status: failure.status,
          body: serializeFailure(error),
          replayWindowMs: job.options.replayWindowMs,
          retentionMs: job.options.retentionMs,
        },
        tx,
      );
      emitExecuted(job, claim.record.operationId, 'failed', claim.takeover, started);
      stored = true;
    });
  } catch (storeError) {
    // The failure is still the answer; it just will not be replayed. The retry runs again.
    job.runtime.emit({ ...job.event, type: 'store-error', operationId: null, error: storeError });
  }
  // Stored: answered exactly as every replay will be.
  return stored
    ? { ok: false, error: storedFailureError(error), marker: trpcMiddlewareMarker }
    : failed;
}
