/**
 * Lockstep with the real server: the idempotent paths the client derives from a router built
 * with `@idem/server`'s `idem.procedure()`, and what does not compile against it.
 */
import type { IdemErrorData } from '@idem/contract';
import { expectTypeOf } from 'vitest';
import {
  idemLink,
  type IdempotentErrorShape,
  type IdempotentInput,
  type IdempotentPath,
} from '@idem/client';
import type { OrdersRouter } from './fixtures/ordersApp.js';

expectTypeOf<IdempotentPath<OrdersRouter>>().toEqualTypeOf<'orders.create'>();
expectTypeOf<IdempotentInput<OrdersRouter, 'orders.create'>>().toEqualTypeOf<{
  sku: string;
  quantity: number;
}>();
expectTypeOf<
  IdempotentErrorShape<OrdersRouter, 'orders.create'>['data']['idem']
>().toEqualTypeOf<IdemErrorData>();

const http = { url: 'http://127.0.0.1:1/trpc' };
idemLink<OrdersRouter>({ http, idempotent: { 'orders.create': { key: (i) => `order-${i.sku}` } } });
// @ts-expect-error the retry-unsafe mutation is not idempotent
idemLink<OrdersRouter>({ http, idempotent: { 'orders.create': true, 'orders.cancel': true } });
// @ts-expect-error orders.create is missing
idemLink<OrdersRouter>({ http, idempotent: {} });
