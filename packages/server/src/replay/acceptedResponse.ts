import { trpcMiddlewareMarker } from '../trpc/trpcInternals.js';
import type { RecordState } from '@idem/contract';
import type { IdemJob, NextResult } from '../request/IdemJob.js';

/** The body of a 202 answer: the operation to poll. */
export interface AcceptedOperation {
  operationId: string;
  /** The record's state when this answer was made. */
  state: RecordState;
}

/** 202 with the operation id: the work runs (or ran) in the background under this id. */
export function acceptedResponse(
  job: IdemJob,
  operationId: string,
  state: RecordState,
): NextResult {
  job.request.response.status = 202;
  const data: AcceptedOperation = { operationId, state };
  return { ok: true, data, marker: trpcMiddlewareMarker };
}
