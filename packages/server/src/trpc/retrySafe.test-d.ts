/**
 * `retrySafe()` marks a mutation in the router type, and refuses, where the types allow it, the
 * marks it contradicts: after `idem.procedure()` or `retryUnsafe()` it does not compile, and
 * `retryUnsafe()` after it does not either; nor does `idem.procedure()` after either mark. (The
 * router audit and the completer refuse the same combinations at start-up, for code the types do
 * not see.)
 */
import { initTRPC } from '@trpc/server';
import type {
  IdemErrorShapeMarker,
  IdemMeta,
  RecoveryStore,
  RetrySafeErrorShapeMarker,
} from '@idem/contract';
import { expectTypeOf, test } from 'vitest';
import { z } from 'zod';
import { createIdempotency } from '../createIdempotency.js';
import type { IdemContext } from '../types/IdemRequest.js';
import { retrySafe } from './retrySafe.js';
import { retryUnsafe } from './retryUnsafe.js';

type Ctx = IdemContext & { account: string };
const t = initTRPC.context<Ctx>().meta<IdemMeta>().create();
const idem = createIdempotency({
  keySecret: 'k'.repeat(32),
  store: {} as RecoveryStore<unknown>,
  scope: (ctx: Ctx) => ctx.account,
});
const authed = t.procedure.use(({ ctx, next }) => next({ ctx: { user: ctx.account } }));

const router = t.router({
  remove: authed
    .input(z.object({ id: z.string() }))
    .concat(retrySafe('deletes by id; a second delete finds nothing'))
    .mutation(({ ctx, input }) => {
      // The context and input before the mark stay as they were.
      expectTypeOf(ctx.user).toEqualTypeOf<string>();
      expectTypeOf(ctx.account).toEqualTypeOf<string>();
      expectTypeOf(input).toEqualTypeOf<{ id: string }>();
      return input.id;
    }),
  // Marked twice the same way: still one decision.
  twice: t.procedure
    .concat(retrySafe('sets the flag'))
    .concat(retrySafe('sets the flag'))
    .mutation(() => 1),
  cancel: t.procedure.concat(retryUnsafe('cancels downstream on every call')).mutation(() => 1),
  create: t.procedure.concat(idem.procedure()).mutation(() => 1),
  plain: t.procedure.mutation(() => 1),
});

type ShapeOf<P> = P extends { _def: { $types: { errorShape: infer S } } } ? S : never;
type Record_ = (typeof router)['_def']['record'];

test('a retry-safe mutation carries the mark in its error shape; no other does', () => {
  expectTypeOf<Extract<ShapeOf<Record_['remove']>, RetrySafeErrorShapeMarker>>().not.toBeNever();
  expectTypeOf<Extract<ShapeOf<Record_['twice']>, RetrySafeErrorShapeMarker>>().not.toBeNever();
  expectTypeOf<Extract<ShapeOf<Record_['remove']>, IdemErrorShapeMarker>>().toBeNever();
  expectTypeOf<Extract<ShapeOf<Record_['cancel']>, RetrySafeErrorShapeMarker>>().toBeNever();
  expectTypeOf<Extract<ShapeOf<Record_['create']>, RetrySafeErrorShapeMarker>>().toBeNever();
  expectTypeOf<Extract<ShapeOf<Record_['plain']>, RetrySafeErrorShapeMarker>>().toBeNever();
  // Errors keep tRPC's default data for the caller.
  expectTypeOf<ShapeOf<Record_['remove']>['data']['httpStatus']>().toEqualTypeOf<number>();
});

test('retrySafe() does not combine with idem.procedure() or retryUnsafe()', () => {
  const keyed = t.procedure.concat(idem.procedure());
  const unsafe = t.procedure.concat(retryUnsafe('charges on every call'));
  const safe = t.procedure.concat(retrySafe('sets the flag'));
  // @ts-expect-error idem.procedure() came first: a keyed mutation is not also safe by nature
  keyed.concat(retrySafe('x'));
  // @ts-expect-error retryUnsafe() and retrySafe() contradict each other
  unsafe.concat(retrySafe('x'));
  // @ts-expect-error retrySafe() and retryUnsafe() contradict each other
  safe.concat(retryUnsafe('x'));
  // @ts-expect-error a mutation safe by nature takes no key
  safe.concat(idem.procedure());
  // @ts-expect-error a retry-unsafe mutation is not also idempotent
  unsafe.concat(idem.procedure());
});
