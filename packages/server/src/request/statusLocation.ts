import { newOperationId } from './operationId.js';
import type { IdemRuntime } from '../types/IdemJob.js';
import type { StatusLocation } from '../types/options.js';

/**
 * Checks `createIdempotency`'s `statusLocation` and turns it into the address of an operation
 * (configured once per app; null without one). A string is the status query's URL path; the
 * function is tried once on a fresh operation id, so that an address no response can carry is
 * refused at start-up rather than on every 202.
 */
export function checkedStatusLocation(
  option: StatusLocation | undefined,
): ((operationId: string) => string) | null {
  if (option === undefined) return null;
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
  return location;
}

/** Refuses an accepted procedure of an app that cannot say where to poll (per procedure). */
export function assertStatusLocation(runtime: Pick<IdemRuntime, 'statusLocation'>): void {
  if (runtime.statusLocation !== null) return;
  throw new TypeError(
    "idem: respond: 'accepted' answers 202 with a Location to poll: pass createIdempotency statusLocation, the URL path of your status query (e.g. '/trpc/jobs.status' for status: authed.input(operationStatusInput).query(idem.operationStatusQuery) under /trpc), or a function (operationId) => address",
  );
}

/** Text a header value can carry as it is: visible ASCII, at least one character. */
function isHeaderText(text: string): boolean {
  return /^[\x21-\x7e]+$/.test(text);
}
