import { initTRPC } from '@trpc/server';
import type { IdemMeta, RecoveryStore } from '@idem/contract';
import { expectTypeOf, test } from 'vitest';
import { createIdempotency } from '../createIdempotency.js';
import type { IdemContext } from '../types/IdemRequest.js';
import type { KeyRequirement } from '../types/options.js';

interface FakeTx {
  insert(row: { sku: string }): Promise<void>;
}
type Ctx = IdemContext & { account: string };
const t = initTRPC.context<Ctx>().meta<IdemMeta>().create();
const base = {
  keySecret: 'k'.repeat(32),
  store: {} as RecoveryStore<FakeTx>,
  scope: (ctx: Ctx) => ctx.account,
};

test("keys is 'required' or 'optional', on the app and on a procedure", () => {
  const idem = createIdempotency({ ...base, keys: 'optional' });
  createIdempotency({ ...base, keys: 'required' });
  // @ts-expect-error keys is 'required' or 'optional'
  createIdempotency({ ...base, keys: 'off' });
  // @ts-expect-error keys is a string, not a flag
  createIdempotency({ ...base, keys: false });
  idem.procedure({ keys: 'required' });
  idem.procedure({ mode: 'external', keys: 'optional' });
  // @ts-expect-error keys is 'required' or 'optional'
  idem.procedure({ keys: 'maybe' });
  expectTypeOf<KeyRequirement>().toEqualTypeOf<'required' | 'optional'>();
});

test("accepted work takes no keys: 'optional' (a call without a key has no operation to poll)", () => {
  const idem = createIdempotency({ ...base, statusLocation: '/trpc/jobs.status' });
  idem.procedure({ mode: 'external', respond: 'accepted', keys: 'required' });
  // @ts-expect-error respond: 'accepted' needs a key on every call
  idem.procedure({ mode: 'external', respond: 'accepted', keys: 'optional' });
});

test('ctx.idem says whether the call is protected by a key, in both modes', () => {
  const idem = createIdempotency({ ...base, keys: 'optional' });
  t.procedure.concat(idem.procedure()).mutation(({ ctx }) => {
    expectTypeOf(ctx.idem.protected).toEqualTypeOf<boolean>();
    expectTypeOf(ctx.idem.tx).toEqualTypeOf<FakeTx>();
  });
  t.procedure.concat(idem.procedure({ mode: 'external' })).mutation(({ ctx }) => {
    expectTypeOf(ctx.idem.protected).toEqualTypeOf<boolean>();
  });
});
