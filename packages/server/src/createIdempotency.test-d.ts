import { initTRPC, type inferRouterError } from '@trpc/server';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { createHTTPServer } from '@trpc/server/adapters/standalone';
import type {
  IdemErrorData,
  IdemErrorShapeMarker,
  IdemMeta,
  IdempotencyStore,
  RecoveryStore,
} from '@idem/contract';
import { expectTypeOf, test } from 'vitest';
import { z } from 'zod';
import { createIdempotency } from './createIdempotency.js';
import { idemContext } from './request/idemContext.js';
import { type IdemContext } from './types/IdemRequest.js';
import type { ExternalIdemExecution } from './types/IdemExecution.js';

interface FakeTx {
  insert(row: { sku: string }): Promise<void>;
}
type Ctx = IdemContext & { account: string };
const t = initTRPC.context<Ctx>().meta<IdemMeta>().create();
const idem = createIdempotency({
  keySecret: 'k'.repeat(32),
  store: {} as RecoveryStore<FakeTx>,
  scope: (ctx: Ctx) => ctx.account,
});

const router = t.router({
  create: t.procedure.concat(idem.procedure()).mutation(async ({ ctx }) => {
    expectTypeOf(ctx.idem.tx).toEqualTypeOf<FakeTx>();
    expectTypeOf(ctx.idem.operationId).toEqualTypeOf<string>();
    expectTypeOf(ctx.account).toEqualTypeOf<string>();
    return 1;
  }),
  send: t.procedure.concat(idem.procedure({ mode: 'external' })).mutation(({ ctx }) => {
    expectTypeOf(ctx.idem).toEqualTypeOf<ExternalIdemExecution<FakeTx>>();
    expectTypeOf(ctx.idem.phase<number>)
      .parameter(1)
      .toEqualTypeOf<(tx: FakeTx) => Promise<number>>();
    // @ts-expect-error external mode has no transaction: side effects cannot roll back
    void ctx.idem.tx;
    return 1;
  }),
  plain: t.procedure.mutation(() => 1),
});

type ShapeOf<P> = P extends { _def: { $types: { errorShape: infer S } } } ? S : never;
type Record_ = (typeof router)['_def']['record'];

test('an idempotent procedure carries data.idem in its error shape; others do not', () => {
  expectTypeOf<
    Extract<ShapeOf<Record_['create']>, IdemErrorShapeMarker>['data']['idem']
  >().toEqualTypeOf<IdemErrorData>();
  expectTypeOf<Extract<ShapeOf<Record_['send']>, IdemErrorShapeMarker>>().not.toBeNever();
  expectTypeOf<Extract<ShapeOf<Record_['plain']>, IdemErrorShapeMarker>>().toBeNever();
  expectTypeOf<inferRouterError<typeof router>>().not.toBeNever();
});

test('idem needs a key secret: keys are never stored as plain hashes', () => {
  // @ts-expect-error keySecret is required
  createIdempotency({ store: {} as RecoveryStore<FakeTx>, scope: (ctx: Ctx) => ctx.account });
});

test('idem refuses a context without idemContext()', () => {
  createIdempotency({
    keySecret: 'k'.repeat(32),
    store: {} as RecoveryStore<FakeTx>,
    // @ts-expect-error the context must include IdemContext (spread idemContext(opts) into it)
    scope: (ctx: { account: string }) => ctx.account,
  });
});

test('idem.procedure() goes after .input(): the other order does not compile', () => {
  const CreateOrder = z.object({ cartId: z.string(), quantity: z.number() });
  // Right: the fingerprint is taken from the parsed input.
  const right = t.procedure
    .input(CreateOrder)
    .concat(idem.procedure())
    .mutation(({ input }) => {
      expectTypeOf(input).toEqualTypeOf<{ cartId: string; quantity: number }>();
      return input.quantity;
    });
  expectTypeOf<(typeof right)['_def']['$types']['input']>().toEqualTypeOf<{
    cartId: string;
    quantity: number;
  }>();

  // Wrong: idem would fingerprint the input before it is parsed, so a reused key with a
  // different input would replay the first result.
  t.procedure
    .concat(idem.procedure())
    // @ts-expect-error .input() after .concat(idem.procedure()): put every .input() first
    .input(CreateOrder);
  t.procedure
    .concat(idem.procedure({ mode: 'external' }))
    // @ts-expect-error same in external mode, and for a primitive input
    .input(z.string());
  // A second object .input() merged in after idem still compiles (tRPC merges object inputs);
  // idem refuses it at run time before the handler runs, and auditRouter reports it.

  // Inputs written before idem keep their exact types: optional objects and primitives too.
  t.procedure
    .input(CreateOrder.optional())
    .concat(idem.procedure())
    .mutation(({ input }) => {
      expectTypeOf(input).toEqualTypeOf<{ cartId: string; quantity: number } | undefined>();
    });
  t.procedure
    .input(z.string())
    .concat(idem.procedure())
    .mutation(({ input }) => {
      expectTypeOf(input).toEqualTypeOf<string>();
    });

  // A mutation without input stays possible: its fingerprint is the same for every call.
  const noInput = t.procedure.concat(idem.procedure()).mutation(() => 1);
  expectTypeOf(noInput).toBeFunction();
});

test('the server refuses a createContext without idemContext(); both adapters take its options', () => {
  createHTTPServer({
    router,
    // @ts-expect-error Property 'idemRequest' is missing: spread idemContext(opts) into the context
    createContext: () => ({ account: 'acct_1' }),
  });
  createHTTPServer({
    router,
    createContext: (opts) => ({ ...idemContext(opts), account: 'acct_1' }),
  });
  void fetchRequestHandler({
    endpoint: '/trpc',
    req: new Request('http://localhost/trpc'),
    router,
    createContext: (opts) => ({ ...idemContext(opts), account: 'acct_1' }),
  });
});

test('idem needs the whole store contract: a store without recovery does not compile', () => {
  createIdempotency({
    keySecret: 'k'.repeat(32),
    // @ts-expect-error external mode, the completer and the operation tools need a RecoveryStore
    store: {} as IdempotencyStore<FakeTx>,
    scope: (ctx: Ctx) => ctx.account,
  });
});
