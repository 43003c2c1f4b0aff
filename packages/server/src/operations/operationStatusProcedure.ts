import { TRPCError } from '@trpc/server';
import { z } from 'zod';
import type { OperationStatus, OperationTools } from './operationTools.js';

/** The input of the status procedure: `{ operationId }`. */
export const operationStatusInput = z.object({ operationId: z.string().min(1).max(100) });

/**
 * The resolver of a status query, ready to mount after your authentication:
 *
 *   status: authed.input(operationStatusInput).query(idem.operationStatusQuery)
 *
 * It answers the caller's own operation, and 404 `NOT_FOUND` ("no such operation") for anything
 * else: another caller's operation id is indistinguishable from a random one.
 */
export function operationStatusQuery<TContext>(tools: OperationTools<TContext>) {
  return async (opts: {
    ctx: TContext;
    input: { operationId: string };
  }): Promise<OperationStatus> => {
    const status = await tools.operationStatus(opts.ctx, opts.input.operationId);
    if (!status) throw new TRPCError({ code: 'NOT_FOUND', message: 'no such operation' });
    return status;
  };
}
