// The app module the samples of docs/testing.md import as `../src/createAppRouter.js`: a router
// factory with an orders and a payments procedure, only as far as the samples need its types.
import type { IdemMeta } from '@idem/contract';
import type { IdemContext } from '@idem/server';
import type { DownstreamRecorder, IdemTestDb, IdemTestStore } from '@idem/testing';
import { initTRPC } from '@trpc/server';
import { z } from 'zod';

type Context = IdemContext & { accountId: string | null };
const t = initTRPC.context<Context>().meta<IdemMeta>().create();

const appRouter = t.router({
  orders: t.router({
    create: t.procedure
      .input(z.object({ sku: z.string(), quantity: z.number().int() }))
      .mutation(({ input }) => ({ sku: input.sku })),
  }),
  payments: t.router({
    create: t.procedure
      .input(z.object({ orderId: z.string(), amountCents: z.number().int() }))
      .mutation(({ input }) => ({ orderId: input.orderId })),
  }),
});

export type AppRouter = typeof appRouter;

export declare function createAppRouter(options: {
  db: IdemTestDb;
  store?: IdemTestStore;
  idem?: unknown;
  processor?: unknown;
  recorder?: DownstreamRecorder;
}): AppRouter;
