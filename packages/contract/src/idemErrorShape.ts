import type { IdemErrorData } from './reasons.js';

/**
 * The `data` fields idem adds to the tRPC error shape of every idempotent procedure.
 *
 * This is also how the compiler knows which procedures are idempotent: idem's procedure builder
 * attaches a per-procedure error formatter (tRPC's `.errors()`), so the procedure's error shape in
 * the router type carries `data.idem`. The client derives its idempotent paths, key-function input
 * types and typed error data from that, with no list to keep in sync by hand.
 *
 * Only errors idem raised itself carry `data.idem`; the handler's own errors keep the shape your
 * root `errorFormatter` gives them, so the procedure's error shape is a union of the two.
 */
export interface IdemErrorShapeData {
  idem: IdemErrorData;
}

/** Matches a tRPC error shape that belongs to an idempotent procedure. */
export interface IdemErrorShapeMarker {
  data: IdemErrorShapeData;
}

/**
 * Matches the member of a mutation's error shape that `retrySafe()` adds in the router type: how
 * the client knows a mutation is safe to retry by nature. A mark for the compiler only: no error
 * on the wire carries it.
 */
export interface RetrySafeErrorShapeMarker {
  data: { idemRetrySafe: true };
}
