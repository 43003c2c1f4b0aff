/**
 * A root `errorFormatter` whose `data` (or whole shape) is `any` matches idem's error-shape marker
 * by accident. It must not make every mutation idempotent: the list would then demand plain
 * mutations, and the link would key and retry them while the server runs each retry again.
 */
import type { IdemMeta, RecoveryStore } from '@idem/contract';
import { createIdempotency, type IdemContext } from '@idem/server';
import { initTRPC } from '@trpc/server';
import { expectTypeOf } from 'vitest';
import { idemLink } from '../link/idemLink.js';
import type {
  IdempotentErrorShape,
  IdempotentPath,
  IsIdempotentMutation,
  MisplacedIdemPath,
  NotIdempotentPath,
} from './IdempotentProcedures.js';

const idem = createIdempotency({
  keySecret: 'k'.repeat(32),
  store: {} as RecoveryStore<unknown>,
  scope: () => 'acct',
});
const http = { url: 'http://127.0.0.1:1/trpc' };

// `data` is `any`.
const t2 = initTRPC
  .context<IdemContext>()
  .meta<IdemMeta>()
  .create({ errorFormatter: ({ shape }) => ({ ...shape, data: shape.data as any }) });
const r2 = t2.router({
  plain: t2.procedure.mutation(() => 3),
  list: t2.procedure.query(() => []),
  create: t2.procedure.concat(idem.procedure()).mutation(() => 1),
});
type R2 = typeof r2;

expectTypeOf<IsIdempotentMutation<R2['plain']>>().toEqualTypeOf<false>();
expectTypeOf<IsIdempotentMutation<R2['create']>>().toEqualTypeOf<true>();
expectTypeOf<IdempotentPath<R2>>().toEqualTypeOf<'create'>();
expectTypeOf<MisplacedIdemPath<R2>>().toBeNever();
expectTypeOf<NotIdempotentPath<R2>>().toEqualTypeOf<'plain' | 'list'>();
// idem's own errors keep their typed `data.idem`, not `any`.
expectTypeOf<IdempotentErrorShape<R2, 'create'>['data']['idem']['reason']>().not.toBeAny();

idemLink<R2>({ http, idempotent: { create: true } });
// @ts-expect-error plain has no idem.procedure(): the link must not key and retry it
idemLink<R2>({ http, idempotent: { create: true, plain: true } });

// The whole shape is `any`: the union of it and idem's own shape is `any` too, so nothing can be
// told idempotent. The list must be empty, and the link keys and retries nothing: the safe side.
const t3 = initTRPC
  .context<IdemContext>()
  .meta<IdemMeta>()
  .create({ errorFormatter: ({ shape }) => shape as any });
const r3 = t3.router({
  plain: t3.procedure.mutation(() => 3),
  create: t3.procedure.concat(idem.procedure()).mutation(() => 1),
});
type R3 = typeof r3;
expectTypeOf<IdempotentPath<R3>>().toBeNever();
idemLink<R3>({ http, idempotent: {} });
// @ts-expect-error plain is not idempotent with an `any` shape
idemLink<R3>({ http, idempotent: { plain: true } });

// `data.idem` itself is `any`: no evidence either.
const t4 = initTRPC
  .context<IdemContext>()
  .meta<IdemMeta>()
  .create({
    errorFormatter: ({ shape }) => ({ ...shape, data: { ...shape.data, idem: null as any } }),
  });
const r4 = t4.router({ plain: t4.procedure.mutation(() => 3) });
expectTypeOf<IdempotentPath<typeof r4>>().toBeNever();
