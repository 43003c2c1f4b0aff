/**
 * idem.procedure() on a query or a subscription answers 500 on every call. The server builder
 * cannot tell a query from a mutation at compile time (tRPC types both builders alike), so the
 * client that lists the router's idempotent procedures refuses to compile instead, saying what
 * to fix on the server.
 */
import type { IdemMeta, RecoveryStore } from '@idem/contract';
import { createIdempotency, type IdemContext } from '@idem/server';
import { initTRPC } from '@trpc/server';
import { expectTypeOf } from 'vitest';
import { z } from 'zod';
import { idemLink } from '../link/idemLink.js';
import type { IdempotentPath, MisplacedIdemPath } from './IdempotentProcedures.js';

const t = initTRPC.context<IdemContext>().meta<IdemMeta>().create();
const idem = createIdempotency({
  keySecret: 'k'.repeat(32),
  store: {} as RecoveryStore<unknown>,
  scope: () => 'acct',
});
const router = t.router({
  create: t.procedure
    .input(z.object({ sku: z.string() }))
    .concat(idem.procedure())
    .mutation(() => 1),
  orders: t.router({
    list: t.procedure.concat(idem.procedure()).query(() => []),
    watch: t.procedure.concat(idem.procedure()).subscription(async function* () {
      yield 1;
    }),
  }),
});
type Router = typeof router;
const http = { url: 'http://127.0.0.1:1/trpc' };

expectTypeOf<IdempotentPath<Router>>().toEqualTypeOf<'create'>();
expectTypeOf<MisplacedIdemPath<Router>>().toEqualTypeOf<'orders.list' | 'orders.watch'>();

idemLink<Router>({
  http,
  // @ts-expect-error Property 'orders.list' is missing ... "idem.procedure() is for mutations only: make orders.list a mutation or drop idem.procedure() from it"
  idempotent: { create: true },
});
idemLink<Router>({
  http,
  idempotent: {
    create: true,
    // @ts-expect-error no value makes a query idempotent
    'orders.list': true,
    // @ts-expect-error nor a subscription
    'orders.watch': true,
  },
});

// A correct router has no misplaced path, so nothing changes for it.
const fixed = t.router({ create: router.create });
expectTypeOf<MisplacedIdemPath<typeof fixed>>().toBeNever();
idemLink<typeof fixed>({ http, idempotent: { create: { key: (input) => input.sku } } });
