/**
 * Compile-time lockstep for retry-safe mutations: the link's `retrySafe` list is derived from the
 * router type (`retrySafe()` on the server), no more, no fewer. Checked by `tsc`, never run:
 * every `@ts-expect-error` line is a call that must not compile.
 */
import type { IdemMeta, RecoveryStore } from '@idem/contract';
import { createIdempotency, retrySafe, retryUnsafe, type IdemContext } from '@idem/server';
import { createTRPCClient, httpBatchLink } from '@trpc/client';
import { initTRPC, type AnyTRPCRouter } from '@trpc/server';
import { expectTypeOf } from 'vitest';
import { z } from 'zod';
import type { ShopRouter } from '../../test/fixtures/shopRouter.js';
import { idemLink } from '../link/idemLink.js';
import type {
  IdempotentPath,
  IdempotentProcedures,
  NotIdempotentPath,
} from './IdempotentProcedures.js';
import type {
  IsRetrySafeMutation,
  NotRetrySafePath,
  RetrySafePath,
  RetrySafeProcedures,
} from './RetrySafeProcedures.js';

const t = initTRPC.context<IdemContext>().meta<IdemMeta>().create();
const idem = createIdempotency({
  keySecret: 'k'.repeat(32),
  store: {} as RecoveryStore<unknown>,
  scope: () => 'acct',
});
const router = t.router({
  cart: t.router({
    add: t.procedure
      .input(z.object({ sku: z.string() }))
      .concat(idem.procedure())
      .mutation(() => 1),
    remove: t.procedure
      .input(z.object({ itemId: z.string() }))
      .concat(retrySafe('deletes by id; a second delete finds nothing'))
      .mutation(() => 1),
    setQuantity: t.procedure
      .concat(retrySafe('sets the quantity to the given value'))
      .mutation(() => 1),
    checkout: t.procedure.concat(retryUnsafe('charges on every call')).mutation(() => 1),
    rename: t.procedure.mutation(() => 1),
    list: t.procedure.query(() => []),
  }),
});
type Router = typeof router;
const http = { url: 'http://127.0.0.1:1/trpc' };
const idempotent = { 'cart.add': true } as const;
const retrySafeList = { 'cart.remove': true, 'cart.setQuantity': true } as const;

// Derived from the router: the retrySafe() mutations, and nothing else.
expectTypeOf<RetrySafePath<Router>>().toEqualTypeOf<'cart.remove' | 'cart.setQuantity'>();
expectTypeOf<NotRetrySafePath<Router>>().toEqualTypeOf<
  'cart.add' | 'cart.checkout' | 'cart.rename' | 'cart.list'
>();
expectTypeOf<IsRetrySafeMutation<Router['cart']['remove']>>().toEqualTypeOf<true>();
expectTypeOf<IsRetrySafeMutation<Router['cart']['checkout']>>().toEqualTypeOf<false>();
// A retry-safe mutation is not idempotent: it takes no key.
expectTypeOf<IdempotentPath<Router>>().toEqualTypeOf<'cart.add'>();
expectTypeOf<NotIdempotentPath<Router>>().toEqualTypeOf<
  'cart.remove' | 'cart.setQuantity' | 'cart.checkout' | 'cart.rename' | 'cart.list'
>();

// The complete lists compile.
idemLink<Router>({ http, idempotent, retrySafe: retrySafeList });
idemLink<Router>({
  http,
  idempotent: { 'cart.add': true },
  retrySafe: { 'cart.remove': true, 'cart.setQuantity': true },
});

// The router has retry-safe mutations: the list is required...
// @ts-expect-error Property 'retrySafe' is missing
idemLink<Router>({ http, idempotent });
// ...and cannot forget one.
// @ts-expect-error Property 'cart.setQuantity' is missing
idemLink<Router>({ http, idempotent, retrySafe: { 'cart.remove': true } });

// No other procedure can be listed as retry-safe, however the list is written: a plain mutation,
// a retryUnsafe one, an idempotent one, a query.
idemLink<Router>({
  http,
  idempotent,
  retrySafe: {
    ...retrySafeList,
    // @ts-expect-error "cart.rename is a mutation without retrySafe(): a retry could run it twice; remove it from this list"
    'cart.rename': true,
  },
});
// @ts-expect-error a retryUnsafe mutation is never retried
idemLink<Router>({ http, idempotent, retrySafe: { ...retrySafeList, 'cart.checkout': true } });
// @ts-expect-error an idempotent mutation belongs in `idempotent`
idemLink<Router>({ http, idempotent, retrySafe: { ...retrySafeList, 'cart.add': true } });
const withQuery = { ...retrySafeList, 'cart.list': true } as const;
// @ts-expect-error a const list naming a query
idemLink<Router>({ http, idempotent, retrySafe: withQuery });
// @ts-expect-error a list typed as a record of anything proves nothing about the router
idemLink<Router>({ http, idempotent, retrySafe: retrySafeList as Record<string, true> });
// @ts-expect-error an entry is `true`
idemLink<Router>({ http, idempotent, retrySafe: { ...retrySafeList, 'cart.remove': false } });
expectTypeOf<RetrySafeProcedures<Router>['cart.checkout']>().toEqualTypeOf<
  | 'cart.checkout is a mutation without retrySafe(): a retry could run it twice; remove it from this list'
  | undefined
>();
expectTypeOf<RetrySafeProcedures<Router>['cart.add']>().toEqualTypeOf<
  | 'cart.add takes an idempotency key (idem.procedure()): list it under idempotent, not retrySafe'
  | undefined
>();

// Nor can a retry-safe mutation be listed as idempotent: the link would key it for nothing.
idemLink<Router>({
  http,
  retrySafe: retrySafeList,
  idempotent: {
    'cart.add': true,
    // @ts-expect-error "cart.remove is retry-safe (retrySafe()) and takes no key: list it under retrySafe, not idempotent"
    'cart.remove': true,
  },
});
expectTypeOf<IdempotentProcedures<Router>['cart.remove']>().toEqualTypeOf<
  | 'cart.remove is retry-safe (retrySafe()) and takes no key: list it under retrySafe, not idempotent'
  | undefined
>();

// Inline in the client's links, the router comes from the client: the same checks.
createTRPCClient<Router>({
  links: [idemLink({ http, idempotent, retrySafe: retrySafeList }), httpBatchLink(http)],
});
createTRPCClient<Router>({
  // @ts-expect-error the list forgets cart.setQuantity
  links: [idemLink({ http, idempotent, retrySafe: { 'cart.remove': true } }), httpBatchLink(http)],
});

// Neither order of retrySafe() and idem.procedure() compiles on the server; built anyway, the
// client refuses it too: the idempotent list requires an entry no value satisfies.
const both = t.router({
  archive: t.procedure
    .concat(retrySafe('sets archived'))
    // @ts-expect-error Context mismatch: a mutation safe by nature takes no key
    .concat(idem.procedure())
    .mutation(() => 1),
});
type Both = typeof both;
expectTypeOf<IdempotentPath<Both>>().toBeNever();
expectTypeOf<RetrySafePath<Both>>().toBeNever();
// @ts-expect-error Property 'archive' is missing ... "archive has both idem.procedure() and retrySafe(): ..."
idemLink<Both>({ http, idempotent: {} });
// @ts-expect-error no value makes it idempotent
idemLink<Both>({ http, idempotent: { archive: true } });
// @ts-expect-error nor retry-safe
idemLink<Both>({ http, idempotent: {} as never, retrySafe: { archive: true } });

// A router without retry-safe mutations needs no list, and takes none but an empty one.
idemLink<ShopRouter>({
  http,
  idempotent: { 'orders.create': true, 'payments.charge': true, 'payments.refuse': true },
});
idemLink<ShopRouter>({
  http,
  idempotent: { 'orders.create': true, 'payments.charge': true, 'payments.refuse': true },
  retrySafe: {},
});
idemLink<ShopRouter>({
  http,
  idempotent: { 'orders.create': true, 'payments.charge': true, 'payments.refuse': true },
  // @ts-expect-error ping has no retrySafe() on the server
  retrySafe: { ping: true },
});

// A root errorFormatter whose `data` is `any` matches every mark: it marks nothing retry-safe.
const loose = initTRPC
  .context<IdemContext>()
  .meta<IdemMeta>()
  .create({ errorFormatter: ({ shape }) => ({ ...shape, data: shape.data as any }) });
const looseRouter = loose.router({
  plain: loose.procedure.mutation(() => 1),
  remove: loose.procedure.concat(retrySafe('deletes by id')).mutation(() => 1),
});
expectTypeOf<RetrySafePath<typeof looseRouter>>().toEqualTypeOf<'remove'>();
expectTypeOf<IsRetrySafeMutation<(typeof looseRouter)['plain']>>().toEqualTypeOf<false>();

// An untyped router has no retry-safe paths to ask for.
expectTypeOf<RetrySafePath<AnyTRPCRouter>>().toBeNever();
expectTypeOf<NotRetrySafePath<AnyTRPCRouter>>().toBeNever();
