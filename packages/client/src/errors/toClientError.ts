import { TRPCClientError } from '@trpc/client';
import type { AnyTRPCRouter } from '@trpc/server';
import { isIdemClientError } from './IdemClientError.js';

/**
 * What a call rejects with: always a `TRPCClientError`, as tRPC callers expect.
 *
 * - A `TRPCClientError` passes through untouched (a 400, a 422 key reused, an unsafe mutation).
 * - A give-up becomes a `TRPCClientError` with idem's message, the give-up as `cause`, and the
 *   last server error's `shape`, `data` and `meta`, so `error.data?.code` checks keep working.
 * - Anything else (an abort, an invalid key, a timeout) is wrapped with `TRPCClientError.from`.
 */
export function toClientError<TRouter extends AnyTRPCRouter>(
  error: unknown,
): TRPCClientError<TRouter> {
  if (error instanceof TRPCClientError) return error as TRPCClientError<TRouter>;
  if (isIdemClientError(error) && error.lastError instanceof TRPCClientError) {
    const last = error.lastError as TRPCClientError<TRouter>;
    return new TRPCClientError<TRouter>(error.message, {
      cause: error,
      ...(last.shape ? { result: { error: last.shape } } : {}),
      ...(last.meta ? { meta: last.meta } : {}),
    });
  }
  return TRPCClientError.from<TRouter>(
    error instanceof Error || (typeof error === 'object' && error !== null)
      ? error
      : new Error(String(error)),
  );
}
