import { trpcMiddlewareMarker } from '../trpc/trpcInternals.js';
import { RETRY_AFTER_HEADER, type RecordState } from '@idem/contract';
import type { IdemJob, NextResult } from '../types/IdemJob.js';

/** The body of a 202 answer: the operation to poll. */
export interface AcceptedOperation {
  operationId: string;
  /** The record's state when this answer was made. */
  state: RecordState;
}

/**
 * 202 with the operation id: the work runs (or ran) in the background under this id. `Location`
 * says where its status is read, `Retry-After` when to read it (the app's in-progress wait).
 */
export function acceptedResponse(
  job: IdemJob,
  operationId: string,
  state: RecordState,
): NextResult {
  const response = job.request.response;
  response.status = 202;
  const location = job.runtime.statusLocation;
  if (location) response.headers.set('Location', location(operationId));
  response.headers.set(
    RETRY_AFTER_HEADER,
    String(Math.max(1, Math.ceil(job.runtime.inProgressRetryAfterMs / 1000))),
  );
  const data: AcceptedOperation = { operationId, state };
  return { ok: true, data, marker: trpcMiddlewareMarker };
}
