/**
 * Compile-time lockstep between the client and the router. Checked by `tsc`, never run: every
 * `@ts-expect-error` line is a call that must not compile.
 */
import type { IdemErrorData } from '@idem/contract';
import { createTRPCClient, httpBatchLink, type TRPCClientError } from '@trpc/client';
import { expectTypeOf } from 'vitest';
import type { ShopRouter } from '../test/fixtures/shopRouter.js';
import { idemLink } from './idemLink.js';
import type {
  IdempotentErrorShape,
  IdempotentInput,
  IdempotentPath,
  IdempotentProcedures,
  IsIdempotentMutation,
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

// A path that is not an idempotent mutation does not compile: a mutation without a key...
idemLink<ShopRouter>({
  http,
  idempotent: {
    'orders.create': true,
    'payments.charge': true,
    'payments.refuse': true,
    // @ts-expect-error Object literal may only specify known properties
    'orders.cancel': true,
  },
});

// ...nor a query, nor a path that does not exist.
idemLink<ShopRouter>({
  http,
  idempotent: {
    'orders.create': true,
    'payments.charge': true,
    'payments.refuse': true,
    // @ts-expect-error Object literal may only specify known properties
    'orders.list': { key: () => 'k' },
  },
});

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

// The list type itself, for code that builds it separately.
expectTypeOf<keyof IdempotentProcedures<ShopRouter>>().toEqualTypeOf<IdempotentPath<ShopRouter>>();

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
// @ts-expect-error a key is a string
withIdempotencyKey(42);
idemLink<ShopRouter>({
  http,
  idempotent: { 'orders.create': true, 'payments.charge': true, 'payments.refuse': true },
  // @ts-expect-error no such option: keys are made once per call, never per attempt
  keyPerAttempt: true,
});
