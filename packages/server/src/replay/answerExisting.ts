import type { TRPCError } from '@trpc/server';
import { trpcMiddlewareMarker } from '../trpc/trpcInternals.js';
import { IDEMPOTENT_REPLAYED_HEADER, type KeyAnswer } from '@idem/contract';
import { inProgress, reject } from '../errors/idemErrors.js';
import { acceptedResponse } from './acceptedResponse.js';
import { fingerprint } from '../hashing/fingerprint.js';
import type { IdemJob, NextResult } from '../types/IdemJob.js';
import { STORED_TAGS } from '../types/ReplayStrategy.js';
import { storedFailureError, storedFailureSchema } from './storedFailure.js';

/**
 * Whether the key's row answers a request by itself: a stored outcome within its replay window
 * (`answerExisting` replays it, or answers 422 when the input differs).
 */
export function settledOutcome(row: KeyAnswer): boolean {
  return (row.state === 'COMPLETED' || row.state === 'TERMINAL_FAILURE') && !row.replayExpired;
}

/**
 * Answers a request whose key another request claimed: replay a stored outcome, or refuse by
 * state. Never runs the procedure.
 */
export async function answerExisting(job: IdemJob, record: KeyAnswer): Promise<NextResult> {
  const operationId = record.operationId;
  const theirs =
    record.fingerprintVersion === job.claim.fingerprintVersion
      ? job.claim.fingerprint
      : fingerprintOrNull(job.input, record.fingerprintVersion);
  if (record.fingerprint !== theirs) {
    throw reject(
      'IDEMPOTENCY_KEY_REUSED',
      'this Idempotency-Key was already used with a different input; use a new key for a new request',
      { operationId },
    );
  }
  if (job.options.respond === 'accepted') {
    // Long-running work: every duplicate gets the same operation, never a second job.
    return acceptedResponse(job, record.operationId, record.state);
  }
  switch (record.state) {
    case 'COMPLETED':
    case 'TERMINAL_FAILURE':
      return replay(job, record);
    case 'OUTCOME_UNKNOWN':
    case 'NEEDS_RECONCILIATION':
      throw reject(
        'IDEMPOTENCY_OUTCOME_UNKNOWN',
        'the outcome of this operation is unknown and awaits reconciliation; do not retry',
        { operationId },
      );
    case 'PENDING':
    case 'IN_PROGRESS':
    case 'RETRYABLE_FAILURE':
      throw inProgress(job.runtime.inProgressRetryAfterMs, operationId);
  }
}

/**
 * The input's fingerprint by the record's algorithm version; null when that algorithm cannot
 * take this input (algorithm 1 and a BigInt): it cannot be the input the record was made from.
 */
function fingerprintOrNull(input: unknown, version: number): string | null {
  try {
    return fingerprint(input, version);
  } catch {
    return null;
  }
}

async function replay(job: IdemJob, record: KeyAnswer): Promise<NextResult> {
  const { operationId } = record;
  const body = record.responseBody;
  const unavailable = (why: string) =>
    reject('IDEMPOTENCY_REPLAY_UNAVAILABLE', `the stored result cannot be replayed: ${why}`, {
      operationId,
    });
  if (body === null) throw unavailable('it was erased');

  let result: NextResult;
  if (record.state === 'TERMINAL_FAILURE') {
    const failure = storedFailureSchema.parse(JSON.parse(body));
    result = {
      ok: false,
      error: storedFailureError(failure),
      marker: trpcMiddlewareMarker,
    };
  } else {
    result = {
      ok: true,
      data: await readStoredOutput(job, body, unavailable),
      marker: trpcMiddlewareMarker,
    };
  }
  job.request.response.headers.set(IDEMPOTENT_REPLAYED_HEADER, 'true');
  // Written out rather than spread from `job.event` (every replay; the same members in the same
  // order): the spread and its added members showed in the replay's profile (about 3 µs a replay).
  const { event } = job;
  job.runtime.emit({
    procedure: event.procedure,
    scope: event.scope,
    keyHash: event.keyHash,
    requestId: event.requestId,
    type: 'replayed',
    operationId,
    status: record.responseStatus ?? 200,
  });
  return result;
}

async function readStoredOutput(
  job: IdemJob,
  body: string,
  unavailable: (why: string) => TRPCError,
): Promise<unknown> {
  const strategy = job.options.replay;
  const { serializer } = job.runtime;
  if (body.startsWith(STORED_TAGS.none))
    throw unavailable('this procedure never stores its result');
  if (body.startsWith(STORED_TAGS.encrypted)) {
    if (strategy.kind !== 'encrypted') throw unavailable('no cipher is configured to read it');
    return serializer.deserialize(
      strategy.cipher.decrypt(body.slice(STORED_TAGS.encrypted.length)),
    );
  }
  if (body.startsWith(STORED_TAGS.reference)) {
    if (strategy.kind !== 'reference')
      throw unavailable('no rebuild is configured for its reference');
    const reference: unknown = JSON.parse(body.slice(STORED_TAGS.reference.length));
    // Rebuilt as the CURRENT caller: authorization runs again, the representation is current.
    const rebuilt = await strategy.rebuild(reference, job.ctx);
    if (rebuilt === null || rebuilt === undefined) {
      throw reject(
        'IDEMPOTENCY_RESOURCE_GONE',
        'this request completed, but the resource it created has been deleted since',
      );
    }
    return rebuilt;
  }
  return serializer.deserialize(body);
}
