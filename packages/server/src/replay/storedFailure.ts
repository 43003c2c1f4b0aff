import { TRPCError } from '@trpc/server';
import { TRPC_ERROR_CODES_BY_KEY } from '@trpc/server/rpc';
import { z } from 'zod';

const trpcCodes = Object.keys(TRPC_ERROR_CODES_BY_KEY) as [
  keyof typeof TRPC_ERROR_CODES_BY_KEY,
  ...(keyof typeof TRPC_ERROR_CODES_BY_KEY)[],
];

/**
 * A deterministic failure as the store keeps it: the tRPC code and message, enough to send the
 * same status and error body again. Never the stack or the cause.
 */
export const storedFailureSchema = z.object({ code: z.enum(trpcCodes), message: z.string() });

export function serializeFailure(error: TRPCError): string {
  return JSON.stringify({ code: error.code, message: error.message });
}

/**
 * The error a stored failure is answered with, on the first response and on every replay alike:
 * only its code and message, with no stack and no cause, so the body is byte-identical whatever
 * tRPC's `isDev` says (with `isDev`, tRPC puts `error.stack` in `data.stack`).
 */
export function storedFailureError(failure: {
  code: TRPCError['code'];
  message: string;
}): TRPCError {
  const error = new TRPCError({ code: failure.code, message: failure.message });
  delete (error as { stack?: string }).stack;
  return error;
}
