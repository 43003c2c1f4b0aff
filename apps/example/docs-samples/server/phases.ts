// The external-mode samples of docs/server.md, verbatim between the markers, with the
// declarations they assume.
import type { IdemMeta } from '@idem/contract';
import { createIdempotency, retryUnsafe, type IdemContext } from '@idem/server';
import { createPgliteStore } from '@idem/store-drizzle/pglite';
import { initTRPC } from '@trpc/server';
import { eq } from 'drizzle-orm';
import { integer, pgTable, serial, text } from 'drizzle-orm/pg-core';
import { drizzle } from 'drizzle-orm/pglite';
import { z } from 'zod';

type Context = IdemContext & { accountId: string };
const t = initTRPC.context<Context>().meta<IdemMeta>().create();
const authed = t.procedure;
const idem = createIdempotency({
  keySecret: process.env.IDEM_KEY_SECRET!,
  store: createPgliteStore(drizzle('memory://')),
  scope: (ctx: Context) => ctx.accountId,
});
const payments = pgTable('payments', {
  id: serial('id').primaryKey(),
  orderId: text('order_id').notNull(),
  amountCents: integer('amount_cents').notNull(),
  state: text('state').notNull(),
  chargeId: text('charge_id'),
});
declare const processor: {
  charge(
    request: { idempotencyKey: string; orderId: string; amountCents: number },
    options: { signal: AbortSignal },
  ): Promise<{ id: string }>;
  findCharge(operationId: string, options: { signal: AbortSignal }): Promise<{ id: string } | null>;
};

// ---- verbatim from docs/server.md: External mode ----
const pay = authed
  .input(z.object({ orderId: z.string(), amountCents: z.number().int().positive() }))
  .concat(idem.procedure({ mode: 'external', leaseMs: 30_000 }))
  .mutation(async ({ ctx, input }) => {
    // a local phase: its writes through `tx` and its recovery point commit together
    const payment = await ctx.idem.phase('reserve', async (tx) => {
      const [row] = await tx
        .insert(payments)
        .values({ ...input, state: 'pending' })
        .returning();
      return { id: row!.id };
    });
    // an external call: the intent is recorded before the call; operationId goes downstream,
    // and `signal` fires at the step's time limit (`timeoutMs`, here half the 30 s lease)
    const charge = await ctx.idem.external('charge', {
      call: (operationId, { signal }) =>
        processor.charge({ idempotencyKey: operationId, ...input }, { signal }),
      lookup: async (operationId, { signal }) => {
        const found = await processor.findCharge(operationId, { signal });
        return found ? { found: true, result: found } : { found: false };
      },
      timeoutMs: 15_000,
    });
    return ctx.idem.phase('record', async (tx) => {
      await tx
        .update(payments)
        .set({ state: 'paid', chargeId: charge.id })
        .where(eq(payments.id, payment.id));
      return { paymentId: payment.id, chargeId: charge.id };
    });
  });

void pay;

// ---- verbatim from docs/server.md: Long-running work and cancellation ----
export const jobsRouter = t.router({
  status: authed
    .input(z.object({ operationId: z.string().uuid() }))
    .query(({ ctx, input }) => idem.operationStatus(ctx, input.operationId)),
  cancel: authed
    .input(z.object({ operationId: z.string().uuid() }))
    .concat(retryUnsafe('cancellation is decided by the state machine, not by a key'))
    .mutation(({ ctx, input }) => idem.cancel(ctx, input.operationId)),
});
// ---- end ----
