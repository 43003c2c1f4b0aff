import type { IdemMeta } from '@idem/contract';
import { createIdempotency, type IdemContext } from '@idem/server';
import { initTRPC } from '@trpc/server';
import { expectTypeOf, test } from 'vitest';
import { z } from 'zod';
import type { MutationInput, MutationPath } from '../app/mutationPaths.js';
import type { IdemTestStore } from '../app/IdemTestDatabase.js';
import type { IdemTestRun } from '../app/startIdemTestApp.js';
import { defineIdemTestApp, type IdemTestAppRouter } from '../app/defineIdemTestApp.js';
import { concurrencyGate } from './concurrencyGate.js';
import { failureGate } from './failureGate.js';
import { scopeGate } from './scopeGate.js';

type Ctx = IdemContext & { account: string };
const t = initTRPC.context<Ctx>().meta<IdemMeta>().create();
const store = {} as IdemTestStore;
const idem = createIdempotency({
  store,
  keySecret: 'k'.repeat(32),
  scope: (ctx: Ctx) => ctx.account,
});
const router = t.router({
  orders: t.router({
    create: t.procedure
      .input(z.object({ sku: z.string() }))
      .concat(idem.procedure())
      .mutation(() => ({ ok: true })),
    list: t.procedure.query(() => []),
  }),
});
type Router = typeof router;
const run = {} as IdemTestRun<Router>;
const effect = async () => 0;

test('a gate takes the path of a mutation of the router, and its input', () => {
  expectTypeOf<MutationPath<Router>>().toEqualTypeOf<'orders.create'>();
  expectTypeOf<MutationInput<Router, 'orders.create'>>().toEqualTypeOf<{ sku: string }>();
  void concurrencyGate(run, {
    path: 'orders.create',
    input: () => ({ sku: 'a' }),
    caller: 'a',
    effect,
  });
  // @ts-expect-error a query is not a mutation a gate can run
  void concurrencyGate(run, { path: 'orders.list', input: () => ({}), caller: 'a', effect });
  // @ts-expect-error no such procedure
  void concurrencyGate(run, { path: 'orders.cancel', input: () => ({}), caller: 'a', effect });
  void concurrencyGate(run, {
    path: 'orders.create',
    // @ts-expect-error the input factory must build the procedure's input
    input: () => ({ sku: 1 }),
    caller: 'a',
    effect,
  });
});

test('the scope gate needs a second caller; every gate needs its effect', () => {
  // @ts-expect-error otherCaller is required
  void scopeGate(run, { path: 'orders.create', input: () => ({ sku: 'a' }), caller: 'a', effect });
  // @ts-expect-error effect is required
  void concurrencyGate(run, { path: 'orders.create', input: () => ({ sku: 'a' }), caller: 'a' });
  void failureGate(run, {
    path: 'orders.create',
    caller: 'a',
    effect,
    deterministic: { input: () => ({ sku: 'gone' }) },
  });
});

test("an app's createContext returns the router's context without idem's part", () => {
  const app = defineIdemTestApp(() => ({
    router,
    createContext: ({ caller }) => ({ account: caller ?? '' }),
  }));
  expectTypeOf<IdemTestAppRouter<typeof app>>().toEqualTypeOf<Router>();
  // @ts-expect-error the context misses the account the router's context needs
  defineIdemTestApp(() => ({ router, createContext: () => ({}) }));
});
