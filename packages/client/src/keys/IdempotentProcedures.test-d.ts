/**
 * Compile-time lockstep between the client and the router. Checked by `tsc`, never run: every
 * `@ts-expect-error` line is a call that must not compile.
 */
import type { IdemErrorData } from '@idem/contract';
import { createTRPCClient, httpBatchLink, type TRPCClientError } from '@trpc/client';
import { expectTypeOf } from 'vitest';
import type { ShopRouter } from '../../test/fixtures/shopRouter.js';
import { idemLink } from '../link/idemLink.js';
import type {
  IdempotentErrorShape,
  IdempotentInput,
  IdempotentPath,
  IdempotentProcedures,
  IsIdempotentMutation,
  NotIdempotentPath,
} from './IdempotentProcedures.js';
import { withIdempotencyKey } from './withIdempotencyKey.js';

const http = { url: 'http://127.0.0.1:1/trpc' };

// The idempotent paths are derived from the router: idem's mutations, and nothing else.
expectTypeOf<IdempotentPath<ShopRouter>>().toEqualTypeOf<
  'orders.create' | 'payments.charge' | 'payments.refuse'
>();
expectTypeOf<IsIdempotentMutation<ShopRouter['orders']['cancel']>>().toEqualTypeOf<false>();
expectTypeOf<IsIdempotentMutation<ShopRouter['orders']['list']>>().toEqualTypeOf<false>();
expectTypeOf<IsIdempotentMutation<ShopRouter['orders']['create']>>().toEqualTypeOf<true>();

// Key functions receive the procedure's input type.
expectTypeOf<IdempotentInput<ShopRouter, 'orders.create'>>().toEqualTypeOf<{
  sku: string;
  quantity: number;
}>();
expectTypeOf<IdempotentInput<ShopRouter, 'payments.charge'>>().toEqualTypeOf<{
  orderId: string;
  amountCents: number;
}>();

// The typed error data of an idempotent procedure carries `data.idem` from the contract.
expectTypeOf<
  IdempotentErrorShape<ShopRouter, 'orders.create'>['data']['idem']
>().toEqualTypeOf<IdemErrorData>();
declare const createError: TRPCClientError<{
  errorShape: IdempotentErrorShape<ShopRouter, 'orders.create'>;
  transformer: false;
}>;
expectTypeOf(createError.data?.idem?.reason).toEqualTypeOf<IdemErrorData['reason'] | undefined>();

// The complete list compiles, with a typed key function.
idemLink<ShopRouter>({
  http,
  idempotent: {
    'orders.create': { key: (input) => `order-${input.sku}-${input.quantity}` },
    'payments.charge': { key: (input) => `charge-${input.orderId}` },
    'payments.refuse': true,
  },
});

// A new idempotent procedure that the list forgets does not compile.
idemLink<ShopRouter>({
  http,
  // @ts-expect-error Property 'payments.refuse' is missing
  idempotent: { 'orders.create': true, 'payments.charge': true },
});

// A path that is not an idempotent mutation does not compile: a mutation without idem (here a
// retryUnsafe one)...
idemLink<ShopRouter>({
  http,
  idempotent: {
    'orders.create': true,
    'payments.charge': true,
    'payments.refuse': true,
    // @ts-expect-error "orders.cancel is a mutation without idem.procedure(): the server would run every retry again; remove it from this list"
    'orders.cancel': true,
  },
});

// ...nor a query...
idemLink<ShopRouter>({
  http,
  idempotent: {
    'orders.create': true,
    'payments.charge': true,
    'payments.refuse': true,
    // @ts-expect-error "orders.list is a query, not an idempotent mutation; remove it from this list"
    'orders.list': { key: () => 'k' },
  },
});

// ...nor a path that does not exist.
idemLink<ShopRouter>({
  http,
  idempotent: {
    'orders.create': true,
    'payments.charge': true,
    'payments.refuse': true,
    // @ts-expect-error Object literal may only specify known properties
    'orders.archive': true,
  },
});

// The same holds however the list is written: the excess-property check above runs only on an
// object literal, so a list held in a const or spread into the literal is checked by type.
const complete = {
  'orders.create': true,
  'payments.charge': true,
  'payments.refuse': true,
} as const;
const withCancel = { ...complete, 'orders.cancel': true } as const;
// @ts-expect-error a const list naming a retryUnsafe mutation: orders.cancel is not idempotent
idemLink<ShopRouter>({ http, idempotent: withCancel });
const unsafe = { 'orders.cancel': true };
// @ts-expect-error one spread in: orders.cancel is not idempotent
idemLink<ShopRouter>({ http, idempotent: { ...complete, ...unsafe } });
// @ts-expect-error a spread list plus a query
idemLink<ShopRouter>({ http, idempotent: { ...complete, ...{ 'orders.list': true } } });
// @ts-expect-error a plain mutation in a const list, as its own value
idemLink<ShopRouter>({ http, idempotent: { ...complete, ping: { key: () => 'k' } } });
const typedWithCancel = { ...complete, ...unsafe };
// @ts-expect-error declaring the list with its type catches a spread too
const declared: IdempotentProcedures<ShopRouter> = typedWithCancel;
void declared;
// @ts-expect-error a list typed as a record of anything proves nothing about the router
idemLink<ShopRouter>({ http, idempotent: complete as Record<string, true> });

// Correct const and spread lists compile, and a key function keeps its input type.
idemLink<ShopRouter>({ http, idempotent: complete });
const withKey = {
  ...complete,
  'orders.create': { key: (input: { sku: string }) => `order-${input.sku}` },
};
idemLink<ShopRouter>({ http, idempotent: withKey });
const listed: IdempotentProcedures<ShopRouter> = {
  ...complete,
  'payments.charge': { key: (input) => `charge-${input.orderId}` },
};
idemLink<ShopRouter>({ http, idempotent: listed });

// A const list that forgets an idempotent path still fails.
const { 'payments.refuse': _refuse, ...incomplete } = complete;
// @ts-expect-error Property 'payments.refuse' is missing
idemLink<ShopRouter>({ http, idempotent: incomplete });

// A key function with the wrong input type does not compile.
idemLink<ShopRouter>({
  http,
  idempotent: {
    // @ts-expect-error orders.create takes { sku, quantity }, not { orderId }
    'orders.create': { key: (input: { orderId: string }) => input.orderId },
    'payments.charge': true,
    'payments.refuse': true,
  },
});

// A key function must return a string.
idemLink<ShopRouter>({
  http,
  idempotent: {
    // @ts-expect-error a number is not a key
    'orders.create': { key: (input) => input.quantity },
    'payments.charge': true,
    'payments.refuse': true,
  },
});

// The list type itself, for code that builds it separately: a required entry per idempotent
// mutation, an entry no value satisfies for every other procedure.
expectTypeOf<NotIdempotentPath<ShopRouter>>().toEqualTypeOf<
  'orders.cancel' | 'orders.list' | 'ping'
>();
expectTypeOf<keyof IdempotentProcedures<ShopRouter>>().toEqualTypeOf<
  IdempotentPath<ShopRouter> | NotIdempotentPath<ShopRouter>
>();
expectTypeOf<IdempotentProcedures<ShopRouter>['orders.cancel']>().toEqualTypeOf<
  | 'orders.cancel is a mutation without idem.procedure(): the server would run every retry again; remove it from this list'
  | undefined
>();

// A caller's own key is a call option; there is no option that makes a key per attempt.
const trpc = createTRPCClient<ShopRouter>({
  links: [
    idemLink<ShopRouter>({
      http,
      idempotent: { 'orders.create': true, 'payments.charge': true, 'payments.refuse': true },
    }),
    httpBatchLink({ url: http.url }),
  ],
});
void trpc.orders.create.mutate({ sku: 'a', quantity: 1 }, withIdempotencyKey('order-confirm-42'));

// Written inline in the client's links, the link takes its router from the client: the list is
// checked against it, and key functions are typed, with no type argument.
createTRPCClient<ShopRouter>({
  links: [
    idemLink({
      http,
      idempotent: {
        'orders.create': { key: (input) => `order-${input.sku}-${input.quantity}` },
        'payments.charge': true,
        'payments.refuse': true,
      },
    }),
    httpBatchLink({ url: http.url }),
  ],
});
createTRPCClient<ShopRouter>({
  // @ts-expect-error inline too, a const list with a retryUnsafe mutation does not compile
  links: [idemLink({ http, idempotent: withCancel }), httpBatchLink({ url: http.url })],
});
createTRPCClient<ShopRouter>({
  // @ts-expect-error nor one that forgets payments.refuse
  links: [idemLink({ http, idempotent: incomplete }), httpBatchLink({ url: http.url })],
});
// @ts-expect-error a key is a string
withIdempotencyKey(42);
idemLink<ShopRouter>({
  http,
  idempotent: { 'orders.create': true, 'payments.charge': true, 'payments.refuse': true },
  // @ts-expect-error no such option: keys are made once per call, never per attempt
  keyPerAttempt: true,
});
