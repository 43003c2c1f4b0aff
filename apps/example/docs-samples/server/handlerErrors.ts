// The "Errors raised into your handler" sample of docs/server.md, verbatim between the markers,
// with the declarations it assumes.
import type { IdemMeta } from '@idem/contract';
import {
  createIdempotency,
  isLostOwnershipError,
  isOutcomeUnknownError,
  type IdemContext,
} from '@idem/server';
import { createPgliteStore } from '@idem/store-drizzle/pglite';
import { initTRPC } from '@trpc/server';
import { drizzle } from 'drizzle-orm/pglite';

type Context = IdemContext & { accountId: string };
const t = initTRPC.context<Context>().meta<IdemMeta>().create();
const idem = createIdempotency({
  store: createPgliteStore(drizzle('memory://')),
  scope: (ctx: Context) => ctx.accountId,
  keySecret: process.env.IDEM_KEY_SECRET!,
});
declare function charge(operationId: string, signal: AbortSignal): Promise<{ id: string }>;

export const send = t.procedure
  .concat(idem.procedure({ mode: 'external' }))
  .mutation(async ({ ctx }) => {
    // ---- verbatim from docs/server.md: Errors raised into your handler ----
    try {
      await ctx.idem.external('charge', { call: (id, { signal }) => charge(id, signal) });
    } catch (error) {
      if (isLostOwnershipError(error) || isOutcomeUnknownError(error)) throw error;
      // ... your own handling of the call's other failures
    }
    // ---- end ----
    return { sent: true };
  });
