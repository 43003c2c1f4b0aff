import { trpcMiddlewareMarker } from '../trpc/trpcInternals.js';
import { RETRY_AFTER_HEADER, type RecordState } from '@idem/contract';
import { newOperationId } from '../request/operationId.js';
import type { IdemJob, IdemRuntime, NextResult } from '../request/IdemJob.js';

/** The body of a 202 answer: the operation to poll. */
export interface AcceptedOperation {
  operationId: string;
  /** The record's state when this answer was made. */
  state: RecordState;
}

/**
 * Where a 202 tells the caller to poll: the URL path of the status query (idem appends
 * `?input=`), or a function of the operation id that returns the whole address.
 */
export type StatusLocation = string | ((operationId: string) => string);

/**
 * Each app's status address (per app), from `createIdempotency`'s `statusLocation`. An app with
 * an accepted procedure always has one: `resolveProcedureOptions` refuses the procedure otherwise.
 */
const statusLocations = new WeakMap<IdemRuntime, (operationId: string) => string>();

/**
 * Checks `statusLocation` and keeps it for the app (configured once per app). A string is the
 * status query's URL path; the function is tried once on a fresh operation id, so that an address
 * no response can carry is refused at start-up rather than on every 202.
 */
export function keepStatusLocation(runtime: IdemRuntime, option: StatusLocation | undefined): void {
  if (option === undefined) return;
  let location: (operationId: string) => string;
  if (typeof option === 'string') {
    if (!isHeaderText(option) || /[?#]/.test(option)) {
      throw new TypeError(
        `createIdempotency: statusLocation '${option}' must be the URL path of your status query, e.g. '/trpc/jobs.status' (idem appends ?input=), without a query or fragment; for any other address pass a function (operationId) => string`,
      );
    }
    location = (operationId) =>
      `${option}?input=${encodeURIComponent(JSON.stringify({ operationId }))}`;
  } else if (typeof option === 'function') {
    location = option;
  } else {
    throw new TypeError(
      'createIdempotency: statusLocation must be the URL path of your status query or a function (operationId) => string',
    );
  }
  const sample = location(newOperationId());
  if (typeof sample !== 'string' || !isHeaderText(sample)) {
    throw new TypeError(
      `createIdempotency: statusLocation returned ${JSON.stringify(sample)} for an operation id; a Location header needs a non-empty URL of visible ASCII characters (encode the input with encodeURIComponent)`,
    );
  }
  statusLocations.set(runtime, location);
}

/** Refuses an accepted procedure of an app that cannot say where to poll (per procedure). */
export function assertStatusLocation(runtime: IdemRuntime): void {
  if (statusLocations.has(runtime)) return;
  throw new TypeError(
    "idem: respond: 'accepted' answers 202 with a Location to poll: pass createIdempotency statusLocation, the URL path of your status query (e.g. '/trpc/jobs.status' for status: authed.input(operationStatusInput).query(idem.operationStatusQuery) under /trpc), or a function (operationId) => address",
  );
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
  const location = statusLocations.get(job.runtime);
  if (location) response.headers.set('Location', location(operationId));
  response.headers.set(
    RETRY_AFTER_HEADER,
    String(Math.max(1, Math.ceil(job.runtime.inProgressRetryAfterMs / 1000))),
  );
  const data: AcceptedOperation = { operationId, state };
  return { ok: true, data, marker: trpcMiddlewareMarker };
}

/** Text a header value can carry as it is: visible ASCII, at least one character. */
function isHeaderText(text: string): boolean {
  return /^[\x21-\x7e]+$/.test(text);
}
