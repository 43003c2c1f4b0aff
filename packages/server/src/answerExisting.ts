import { TRPCError } from '@trpc/server';
import { middlewareMarker } from '@trpc/server/unstable-core-do-not-import';
import { IDEMPOTENT_REPLAYED_HEADER, type IdempotencyRecord } from '@idem/contract';
import { fingerprint } from './fingerprint.js';
import type { IdemJob, NextResult } from './IdemJob.js';
import { storedFailureSchema } from './storedFailure.js';

/**
 * Answers a request whose key another request claimed: replay a stored outcome, or refuse by
 * state. Never runs the procedure.
 */
export function answerExisting(job: IdemJob, record: IdempotencyRecord): NextResult {
  const operationId = record.operationId;
  if (record.fingerprint !== fingerprint(job.input, record.fingerprintVersion)) {
    throw job.reject(
      'IDEMPOTENCY_KEY_REUSED',
      'this Idempotency-Key was already used with a different input; use a new key for a new request',
      { operationId },
    );
  }
  switch (record.state) {
    case 'COMPLETED':
    case 'TERMINAL_FAILURE':
      return replay(job, record);
    case 'OUTCOME_UNKNOWN':
    case 'NEEDS_RECONCILIATION':
      throw job.reject(
        'IDEMPOTENCY_OUTCOME_UNKNOWN',
        'the outcome of this operation is unknown and awaits reconciliation; do not retry',
        { operationId },
      );
    case 'PENDING':
    case 'IN_PROGRESS':
    case 'RETRYABLE_FAILURE':
      throw inProgress(job, operationId);
  }
}

/** 409: another request holds the key. */
export function inProgress(job: IdemJob, operationId?: string): TRPCError {
  const retryAfterMs = job.runtime.inProgressRetryAfterMs;
  return job.reject(
    'IDEMPOTENCY_REQUEST_IN_PROGRESS',
    'a request with this Idempotency-Key is still in progress; retry after the delay',
    operationId === undefined ? { retryAfterMs } : { retryAfterMs, operationId },
  );
}

function replay(job: IdemJob, record: IdempotencyRecord): NextResult {
  const body = record.responseBody ?? '';
  job.request.responseHeaders.set(IDEMPOTENT_REPLAYED_HEADER, 'true');
  job.runtime.emit({
    ...job.event,
    type: 'replayed',
    operationId: record.operationId,
    status: record.responseStatus ?? 200,
  });
  if (record.state === 'COMPLETED') {
    return { ok: true, data: job.runtime.serializer.deserialize(body), marker: middlewareMarker };
  }
  const failure = storedFailureSchema.parse(JSON.parse(body));
  return {
    ok: false,
    error: new TRPCError({ code: failure.code, message: failure.message }),
    marker: middlewareMarker,
  };
}
