// The TypeScript sample of README.md, verbatim between the markers, with the declarations it
// assumes.
import type { IdemMeta } from '@idem/contract';
import { idemFetch, idemLink } from '@idem/client';
import { createIdempotency, type IdemContext } from '@idem/server';
import { createPostgresJsStore } from '@idem/store-drizzle/postgres-js';
import { createTRPCClient, httpBatchLink } from '@trpc/client';
import { initTRPC } from '@trpc/server';
import { integer, pgTable, serial, text } from 'drizzle-orm/pg-core';
import { drizzle } from 'drizzle-orm/postgres-js';
import { z } from 'zod';

type Context = IdemContext & { accountId: string };
declare const db: ReturnType<typeof drizzle>;
declare const url: string;
const t = initTRPC.context<Context>().meta<IdemMeta>().create();
const authed = t.procedure;
const orders = pgTable('orders', {
  id: serial('id').primaryKey(),
  cartId: text('cart_id').notNull(),
  sku: text('sku').notNull(),
  quantity: integer('quantity').notNull(),
});

// ---- verbatim from README.md: Usage ----
// server: make a mutation idempotent
const idem = createIdempotency({
  store: createPostgresJsStore(db), // or createPgliteStore(db); run `migrate(db)` once first
  scope: (ctx: Context) => ctx.accountId, // keys are per caller, never global
});

export const appRouter = t.router({
  createOrder: authed
    .input(z.object({ cartId: z.string(), sku: z.string(), quantity: z.number().int() }))
    .concat(idem.procedure()) // claim the key, run once, store the outcome, replay it to retries
    .mutation(async ({ ctx, input }) => {
      // local mode: these writes commit in one transaction with the claim and the stored result
      const [order] = await ctx.idem.tx.insert(orders).values(input).returning();
      return order!;
    }),
});
export type AppRouter = typeof appRouter;

// client: one key per logical call, reused by every retry; what is idempotent comes from AppRouter
const trpc = createTRPCClient<AppRouter>({
  links: [
    idemLink<AppRouter>({
      http: { url },
      idempotent: { createOrder: { key: (input) => `order-${input.cartId}` } },
    }),
    httpBatchLink({ url, fetch: idemFetch() }),
  ],
});
await trpc.createOrder.mutate({ cartId: 'cart_42', sku: 'tea', quantity: 2 });
// ---- end ----
