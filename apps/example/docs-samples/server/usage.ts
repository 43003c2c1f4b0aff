// The TypeScript samples of docs/server.md, verbatim between the markers, with the declarations
// they assume. Typechecked by `pnpm --filter @idem/example typecheck`; test/docsSamples.test.ts
// fails when a sample in the docs no longer appears here.
import type { IncomingMessage } from 'node:http';
import { pgTable, serial, text, integer } from 'drizzle-orm/pg-core';
import { it } from 'vitest';
import { z } from 'zod';

const CreateOrder = z.object({ sku: z.string().min(1), quantity: z.number().int().min(1) });
const CancelOrder = z.object({ orderId: z.string() });
const orders = pgTable('orders', {
  id: serial('id').primaryKey(),
  accountId: text('account_id').notNull(),
  sku: text('sku').notNull(),
  quantity: integer('quantity').notNull(),
});
declare function authenticate(req: IncomingMessage | Request): string | null;

// ---- verbatim from docs/server.md: Usage ----
import { initTRPC, TRPCError } from '@trpc/server';
import { createHTTPServer } from '@trpc/server/adapters/standalone';
import type { IdemMeta } from '@idem/contract';
import {
  createIdempotency,
  idemContext,
  idemResponseMeta,
  retryUnsafe,
  type IdemContext,
} from '@idem/server';
import { createPostgresJsStore, migrate } from '@idem/store-drizzle/postgres-js';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';

type Context = IdemContext & { accountId: string | null };

const db = drizzle(postgres(process.env.DATABASE_URL!));
await migrate(db); // idem's own tables and migrations table; never touches yours

const t = initTRPC.context<Context>().meta<IdemMeta>().create();
const authed = t.procedure.use(({ ctx, next }) => {
  if (!ctx.accountId) throw new TRPCError({ code: 'UNAUTHORIZED' });
  return next({ ctx: { accountId: ctx.accountId } });
});

const idem = createIdempotency({
  store: createPostgresJsStore(db),
  scope: (ctx: Context) => ctx.accountId ?? '', // required: keys are per caller, never global
  keySecret: process.env.IDEM_KEY_SECRET!, // required, 32+ characters: keys are kept as HMACs
});

export const appRouter = t.router({
  orders: t.router({
    create: authed
      .input(CreateOrder)
      .concat(idem.procedure()) // after auth and input: replays re-run authorization
      .mutation(({ ctx, input }) =>
        // local mode: write through ctx.idem.tx; claim, writes and result commit together
        ctx.idem.tx
          .insert(orders)
          .values({ ...input, accountId: ctx.accountId })
          .returning(),
      ),
    cancel: authed
      .input(CancelOrder)
      .concat(retryUnsafe('cancels at the warehouse on every call'))
      .mutation(async ({ ctx, input }) => {
        /* calls the warehouse */
      }),
  }),
});

createHTTPServer({
  router: appRouter,
  // pass the adapter's options as they come: idem reads the key header(s) from the request and
  // sets Idempotent-Replayed and Retry-After on the response itself
  createContext: (opts) => ({ ...idemContext(opts), accountId: authenticate(opts.req) }),
  responseMeta: idemResponseMeta, // the 202 of `respond: 'accepted'`; harmless otherwise
}).listen(3000);

// ---- verbatim from docs/server.md: the fetch adapter ----
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';

export const handler = (req: Request) =>
  fetchRequestHandler({
    endpoint: '/trpc',
    req,
    router: appRouter,
    createContext: (opts) => ({ ...idemContext(opts), accountId: authenticate(opts.req) }),
    responseMeta: idemResponseMeta, // needed here for the 202 of accepted work
  });

// ---- verbatim from docs/server.md: Router audit ----
import { assertRouterDecided } from '@idem/server';
import { auditRouter } from '@idem/server/operator';

it('every mutation is decided', () => assertRouterDecided(appRouter));
console.table((await auditRouter(appRouter)).mutations);
