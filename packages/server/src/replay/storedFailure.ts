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
