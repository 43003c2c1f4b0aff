import type { TRPCDefaultErrorData, TRPCDefaultErrorShape } from '@trpc/server';
import type { IdemErrorShapeData } from '@idem/contract';
import { readIdemErrorCause } from './IdemRequestError.js';

/** The error shape of an error idem raised: tRPC's default shape plus `data.idem`. */
export type IdemErrorShape = TRPCDefaultErrorShape & {
  data: TRPCDefaultErrorData & IdemErrorShapeData;
};

/**
 * The per-procedure error formatter idem attaches. It shapes only the errors idem raised; every
 * other error falls through to your root `errorFormatter` untouched. Its presence in the router
 * type is also how the client knows the procedure is idempotent.
 */
export function formatIdemError(opts: {
  error: { cause?: unknown };
  shape: TRPCDefaultErrorShape;
}): IdemErrorShape | undefined {
  const idem = readIdemErrorCause(opts.error);
  if (!idem) return undefined;
  return { ...opts.shape, data: { ...opts.shape.data, idem } };
}
