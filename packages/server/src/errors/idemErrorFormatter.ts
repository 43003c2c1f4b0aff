import { randomBytes } from 'node:crypto';
import type { TRPCDefaultErrorData, TRPCDefaultErrorShape, TRPCError } from '@trpc/server';
import { RETRY_AFTER_HEADER, type IdemErrorData } from '@idem/contract';
import type { IdemContext } from '../types/IdemRequest.js';
import { readIdemErrorCause } from './IdemRequestError.js';
import { isDatabaseUnreachable } from './isDatabaseUnreachable.js';

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
  /**
   * Milliseconds a 503 for an unreachable database asks the client to wait: its `Retry-After`, in
   * whole seconds, at least 1. Defaults to 1000 (`Retry-After: 1`), the wait of idem's own 503s.
   */
  unavailableRetryAfterMs?: number;
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
 * A failure that tRPC would answer 500 and whose cause chain says the database is unreachable
 * ({@link isDatabaseUnreachable}, the classification that turns a keyed mutation's failure into
 * the store's 503) is answered 503 `SERVICE_UNAVAILABLE` with `Retry-After`, masked alike, on
 * every procedure: a client retries a 503, not a 500. tRPC takes the HTTP status from the shape's
 * `data.httpStatus`; `Retry-After` goes through `ctx.idemRequest` (written straight to the
 * response, or by `idemResponseMeta`), and `idemResponseMeta` also sets it when `createContext`
 * itself failed that way (no context).
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
  const retryAfter = retryAfterSeconds(options.unavailableRetryAfterMs);
  // One id per error, however often tRPC formats it; reported once.
  const ids = new WeakMap<TRPCError, string>();
  return ({ error, shape: given, ctx, path, type }) => {
    const idem = readIdemErrorCause(error);
    if (idem) return { ...given, data: { ...given.data, idem } };
    const request = (ctx as Partial<IdemContext> | undefined)?.idemRequest;
    let shape = given;
    if (given.data.httpStatus === 500 && isDatabaseUnreachable(error)) {
      shape = { ...given, data: { ...given.data, code: 'SERVICE_UNAVAILABLE', httpStatus: 503 } };
      unavailableRetryAfter.set(error, retryAfter);
      request?.response.headers.set(RETRY_AFTER_HEADER, retryAfter);
    }
    if (!mask(error, shape.data.httpStatus)) return shape;
    let errorId = ids.get(error);
    if (errorId === undefined) {
      errorId = `err_${randomBytes(8).toString('hex')}`;
      ids.set(error, errorId);
      const requestId = request?.requestId ?? null;
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

/**
 * The `Retry-After` of each error answered 503 for an unreachable database, for `idemResponseMeta`
 * when there is no context to carry it (`createContext` failed).
 */
const unavailableRetryAfter = new WeakMap<object, string>();

/** The `Retry-After` value {@link idemErrorFormatter} gave `error`, if it answered it 503. */
export function unavailableRetryAfterOf(error: unknown): string | undefined {
  return typeof error === 'object' && error !== null ? unavailableRetryAfter.get(error) : undefined;
}

function retryAfterSeconds(ms: number | undefined): string {
  if (ms === undefined) return '1';
  if (!Number.isFinite(ms) || ms < 0) {
    throw new TypeError(
      `idemErrorFormatter: unavailableRetryAfterMs must be a number of milliseconds from 0, got ${ms}`,
    );
  }
  return String(Math.max(1, Math.ceil(ms / 1000)));
}

function defaultMask(_error: TRPCError, httpStatus: number): boolean {
  return httpStatus >= 500;
}

function defaultOnMasked(masked: MaskedError): void {
  console.error(`masked error ${masked.errorId} at ${masked.path ?? '?'}:`, masked.error);
}
