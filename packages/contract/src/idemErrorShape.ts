import type { IdemErrorData } from './reasons.js';

/**
 * The `data` fields idem adds to the tRPC error shape of every idempotent procedure.
 *
 * This is also how the compiler knows which procedures are idempotent: idem's procedure builder
 * attaches a per-procedure error formatter (tRPC's `.errors()`), so the procedure's error shape in
 * the router type carries `data.idem`. The client derives its idempotent paths, key-function input
 * types and typed error data from that, with no list to keep in sync by hand.
 *
 * `idem` is `null` on errors idem did not raise (the handler's own errors).
 */
export interface IdemErrorShapeData {
  idem: IdemErrorData | null;
}

/** Matches a tRPC error shape that belongs to an idempotent procedure. */
export interface IdemErrorShapeMarker {
  data: IdemErrorShapeData;
}
