// The "Calls without a key" sample of docs/server.md, verbatim between the markers, with the
// declarations it assumes.
import type { IdemMeta } from '@idem/contract';
import { createIdempotency, type IdemContext } from '@idem/server';
import { createPgliteStore } from '@idem/store-drizzle/pglite';
import { initTRPC } from '@trpc/server';
import { drizzle } from 'drizzle-orm/pglite';
import { z } from 'zod';

type Context = IdemContext & { accountId: string };
const t = initTRPC.context<Context>().meta<IdemMeta>().create();
const authed = t.procedure;
const store = createPgliteStore(drizzle('memory://'));
const scope = (ctx: Context) => ctx.accountId;
const keySecret = process.env.IDEM_KEY_SECRET!;
const CreateOrder = z.object({ sku: z.string() });
const Pay = z.object({ orderId: z.number() });

// ---- verbatim from docs/server.md: Calls without a key ----
const idem = createIdempotency({ store, scope, keySecret, keys: 'optional' });
const create = authed.input(CreateOrder).concat(idem.procedure()); // optional: the app's
const pay = authed.input(Pay).concat(idem.procedure({ keys: 'required' })); // never without
// ---- end ----

export const rolloutRouter = t.router({
  create: create.mutation(({ input }) => ({ sku: input.sku })),
  pay: pay.mutation(({ input }) => ({ paid: input.orderId })),
});
