/**
 * The canary of `trpcInternals.ts`: idem answers replays without calling `next()`, with a result
 * marked by tRPC's internal `middlewareMarker`, and stores failures under tRPC's code table. If a
 * tRPC release changes either, these calls through `createCaller` fail here first.
 */
import { initTRPC, TRPCError } from '@trpc/server';
import type { IdemMeta, RecoveryStore } from '@idem/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { pgliteEnv, type TestEnv } from '../../test/fixtures/databases.js';
import { createIdempotency } from '../createIdempotency.js';
import { idemContext, type IdemContext } from '../request/idemContext.js';
import { trpcMiddlewareMarker } from './trpcInternals.js';

type Ctx = IdemContext & { account: string };
const t = initTRPC.context<Ctx>().meta<IdemMeta>().create();

let env: TestEnv;
beforeAll(async () => {
  env = await pgliteEnv();
});
afterAll(async () => {
  await env?.[Symbol.asyncDispose]();
});

function build() {
  const store: RecoveryStore<unknown> = env.store;
  const idem = createIdempotency({
    keySecret: 'k'.repeat(32),
    store,
    scope: (ctx: Ctx) => ctx.account,
  });
  let runs = 0;
  const router = t.router({
    create: t.procedure
      .input(z.object({ amount: z.number() }))
      .concat(idem.procedure())
      .mutation(({ input }) => {
        runs += 1;
        if (input.amount < 0) throw new TRPCError({ code: 'BAD_REQUEST', message: 'negative' });
        return { id: `order-${runs}`, amount: input.amount };
      }),
  });
  const call = (key: string, amount: number) =>
    router
      .createCaller({
        account: 'acct-canary',
        ...idemContext(new Headers({ 'idempotency-key': key })),
      })
      .create({ amount });
  return { call, runs: () => runs };
}

describe('tRPC internals (canary)', () => {
  it('tRPC still marks middleware results with the marker idem re-exports', async () => {
    let seen: unknown;
    const probe = t.procedure
      .use(async ({ next }) => {
        const result = await next();
        seen = (result as { marker?: unknown }).marker;
        return result;
      })
      .query(() => 1);
    await t
      .router({ probe })
      .createCaller({ account: 'a', ...idemContext(new Headers()) })
      .probe();
    expect(seen).toBe(trpcMiddlewareMarker);
  });

  it('replays a stored result through createCaller without running the handler again', async () => {
    const app = build();
    const first = await app.call('canary-key-0001', 5);
    const again = await app.call('canary-key-0001', 5);
    expect(again).toEqual(first);
    expect(app.runs()).toBe(1);
  });

  it('replays a stored deterministic failure with its tRPC code', async () => {
    const app = build();
    const first = await app.call('canary-key-0002', -1).catch((error: unknown) => error);
    const again = await app.call('canary-key-0002', -1).catch((error: unknown) => error);
    expect(first).toBeInstanceOf(TRPCError);
    expect(again).toMatchObject({ code: 'BAD_REQUEST', message: 'negative' });
    expect(app.runs()).toBe(1);
  });
});
