// The recorder sample of docs/testing.md (an external step in the handler), verbatim between the
// markers, with the declarations it assumes.
import type { IdemMeta } from '@idem/contract';
import type { IdemContext, Idempotency } from '@idem/server';
import type { DownstreamRecorder } from '@idem/testing';
import { initTRPC } from '@trpc/server';
import type { FakeProcessor } from './FakeProcessor.js';

type Context = IdemContext & { accountId: string };
const t = initTRPC.context<Context>().meta<IdemMeta>().create();
declare const idem: Idempotency<Context, unknown>;
declare const processor: FakeProcessor;
declare const recorder: DownstreamRecorder;
declare const input: { orderId: string; amountCents: number };

export const create = t.procedure
  .concat(idem.procedure({ mode: 'external' }))
  .mutation(async ({ ctx }) => {
    // ---- verbatim from docs/testing.md: Crash points, in the handler ----
    const charge = await ctx.idem.external('charge', {
      call: recorder.call('charge', (operationId, { signal }) =>
        processor.charge({ idempotencyKey: operationId, ...input }, { signal }),
      ),
      lookup: recorder.lookup('charge', async (operationId) => {
        const found = await processor.findCharge(operationId);
        return found ? { found: true, result: found } : { found: false };
      }),
    });
    // ---- end ----
    return charge;
  });
