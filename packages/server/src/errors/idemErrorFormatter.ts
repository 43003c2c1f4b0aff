import { randomBytes } from 'node:crypto';
import type { TRPCDefaultErrorData, TRPCDefaultErrorShape, TRPCError } from '@trpc/server';
import type { IdemErrorData } from '@idem/contract';
import type { IdemContext } from '../request/idemContext.js';
import { readIdemErrorCause } from './IdemRequestError.js';

/** What {@link idemErrorFormatter} reports about an error it masked: for your server log. */
export interface MaskedError {
  /** The id the caller got in the message, e.g. `err_4f1c2a9b0e7d3c65`. */
  errorId: string;
  /** The original error, with its message, cause chain and stack. */
  error: TRPCError;
  /** The procedure path, when known. */
  path: string | undefined;
  type: string;
  /** The client's per-attempt `X-Request-Id`, when it sent one and the context was built. */
  requestId: string | null;
}

/** Options of {@link idemErrorFormatter} (configured once per app). */
export interface IdemErrorFormatterOptions {
  /**
   * Receives each masked error once: log it here. Defaults to `console.error` of the error id,
   * the path and the error (its message can quote SQL and parameters: keep it in server logs).
   */
  onMasked?: (masked: MaskedError) => void;
  /**
   * Whether an error's message must be hidden from the caller. Defaults to every error answered
   * with HTTP 500 or above, except idem's own (their messages are fixed texts without detail).
   */
  mask?: (error: TRPCError, httpStatus: number) => boolean;
  /** The text a masked error carries, before `; error id ...`. Defaults to `Internal server error`. */
  message?: string;
}

/** The error shape {@link idemErrorFormatter} returns: tRPC's default, `data.idem` when idem refused. */
export type IdemRootErrorShape = TRPCDefaultErrorShape & {
  data: TRPCDefaultErrorData & { idem?: IdemErrorData };
};

/**
 * A root `errorFormatter` for `initTRPC.create()`. It masks internal errors: a 5xx reaches the
 * caller as `Internal server error; error id err_...`, and the detail (a driver's message can
 * quote the statement and its parameters) goes to `onMasked`, under the same id. It also adds
 * `data.idem` to errors idem raises outside a procedure (a batch refused in `createContext`).
 *
 * @example
 * const t = initTRPC.context<Context>().meta<IdemMeta>().create({
 *   isDev: false,
 *   errorFormatter: idemErrorFormatter({ onMasked: (m) => log.error(m) }),
 * });
 */
export function idemErrorFormatter(
  options: IdemErrorFormatterOptions = {},
): (opts: {
  error: TRPCError;
  shape: TRPCDefaultErrorShape;
  ctx?: unknown;
  path?: string | undefined;
  type?: string;
}) => IdemRootErrorShape {
  const onMasked = options.onMasked ?? defaultOnMasked;
  const mask = options.mask ?? defaultMask;
  const text = options.message ?? 'Internal server error';
  // One id per error, however often tRPC formats it; reported once.
  const ids = new WeakMap<TRPCError, string>();
  return ({ error, shape, ctx, path, type }) => {
    const idem = readIdemErrorCause(error);
    if (idem) return { ...shape, data: { ...shape.data, idem } };
    if (!mask(error, shape.data.httpStatus)) return shape;
    let errorId = ids.get(error);
    if (errorId === undefined) {
      errorId = `err_${randomBytes(8).toString('hex')}`;
      ids.set(error, errorId);
      const requestId = (ctx as Partial<IdemContext> | undefined)?.idemRequest?.requestId ?? null;
      try {
        onMasked({ errorId, error, path, type: type ?? 'unknown', requestId });
      } catch {
        // A failing log hook must not turn into another error.
      }
    }
    const { stack: _stack, ...data } = shape.data;
    return { ...shape, message: `${text}; error id ${errorId}`, data };
  };
}

function defaultMask(_error: TRPCError, httpStatus: number): boolean {
  return httpStatus >= 500;
}

function defaultOnMasked(masked: MaskedError): void {
  console.error(`masked error ${masked.errorId} at ${masked.path ?? '?'}:`, masked.error);
}
