// The router that docs/client.md imports as `../server/router`: an `orders.create` whose input
// has a `cartId`, and a `payments.charge`, both idempotent. Its idem and store serve the other
// samples' declarations.
import type { IdemMeta } from '@idem/contract';
import { createIdempotency, type IdemContext } from '@idem/server';
import { createPgliteStore } from '@idem/store-drizzle/pglite';
import { initTRPC } from '@trpc/server';
import { drizzle } from 'drizzle-orm/pglite';
import { z } from 'zod';

type Context = IdemContext & { accountId: string };
const t = initTRPC.context<Context>().meta<IdemMeta>().create();
export const store = createPgliteStore(drizzle('memory://'));
export const idem = createIdempotency({
  keySecret: process.env.IDEM_KEY_SECRET!,
  store,
  scope: (ctx: Context) => ctx.accountId,
});

export const appRouter = t.router({
  orders: t.router({
    create: t.procedure
      .input(z.object({ cartId: z.string() }))
      .concat(idem.procedure())
      .mutation(({ input }) => ({ id: `order-${input.cartId}` })),
  }),
  payments: t.router({
    charge: t.procedure
      .input(z.object({ amountCents: z.number().int() }))
      .concat(idem.procedure({ mode: 'external' }))
      .mutation(({ input }) => ({ charged: input.amountCents })),
  }),
});

export type AppRouter = typeof appRouter;
