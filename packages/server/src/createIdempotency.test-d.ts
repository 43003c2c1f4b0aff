import { initTRPC, type inferRouterError } from '@trpc/server';
import type {
  IdemErrorData,
  IdemErrorShapeMarker,
  IdemMeta,
  IdempotencyStore,
} from '@idem/contract';
import { expectTypeOf, test } from 'vitest';
import { createIdempotency } from './createIdempotency.js';
import type { IdemContext } from './idemContext.js';
import type { ExternalIdemExecution } from './IdemExecution.js';

interface FakeTx {
  insert(row: { sku: string }): Promise<void>;
}
type Ctx = IdemContext & { account: string };
const t = initTRPC.context<Ctx>().meta<IdemMeta>().create();
const idem = createIdempotency({
  store: {} as IdempotencyStore<FakeTx>,
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

test('idem refuses a context without idemContext()', () => {
  createIdempotency({
    store: {} as IdempotencyStore<FakeTx>,
    // @ts-expect-error the context must include IdemContext (spread idemContext(req) into it)
    scope: (ctx: { account: string }) => ctx.account,
  });
});
