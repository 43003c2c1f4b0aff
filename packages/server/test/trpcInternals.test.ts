/**
 * The canary of `src/trpc/trpcInternals.ts`: idem answers replays without calling `next()`, with a
 * result marked by tRPC's internal `middlewareMarker`, and stores failures under tRPC's code table.
 * If a tRPC release changes either, these calls through `createCaller` fail here first.
 */
import { initTRPC, TRPCError } from '@trpc/server';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import type { IdemMeta, RecoveryStore } from '@idem/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { pgliteEnv, type TestEnv } from './fixtures/databases.js';
import { createIdempotency } from '../src/createIdempotency.js';
import { idemContext } from '../src/request/idemContext.js';
import { type IdemContext } from '../src/types/IdemRequest.js';
import { trpcMiddlewareMarker } from '../src/trpc/trpcInternals.js';

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

  it("gives idem's errors idem's shape and leaves every other error to the root formatter", async () => {
    // idem's middleware shapes errors itself (tRPC's internal setFormattedErrorShape), where
    // an `.errors()` layer did before: the wire shape must not change.
    const root = initTRPC
      .context<Ctx>()
      .meta<IdemMeta>()
      .create({
        errorFormatter: ({ shape }) => ({ ...shape, data: { ...shape.data, root: true } }),
      });
    const idem = createIdempotency({
      keySecret: 'k'.repeat(32),
      store: env.store as RecoveryStore<unknown>,
      scope: (ctx: Ctx) => ctx.account,
    });
    const router = root.router({
      create: root.procedure
        .input(z.object({ amount: z.number() }))
        .concat(idem.procedure())
        .mutation(({ input }) => {
          if (input.amount < 0) throw new TRPCError({ code: 'BAD_REQUEST', message: 'negative' });
          return { amount: input.amount };
        }),
    });
    const post = async (headers: Record<string, string>, amount: number) => {
      const response = await fetchRequestHandler({
        endpoint: '/trpc',
        router,
        req: new Request('http://localhost/trpc/create', {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...headers },
          body: JSON.stringify({ amount }),
        }),
        createContext: ({ req }) => ({ ...idemContext(req.headers), account: 'acct-shape' }),
      });
      return {
        status: response.status,
        body: (await response.json()) as { error: { data: Record<string, unknown> } },
      };
    };
    // An error idem raised before the handler: idem's shape, not the root formatter's.
    const invalid = await post({ 'idempotency-key': 'bad key with spaces' }, 1);
    expect(invalid.status).toBe(400);
    expect(invalid.body.error.data.idem).toMatchObject({ reason: 'IDEMPOTENCY_KEY_INVALID' });
    expect(invalid.body.error.data.root).toBeUndefined();
    // The handler's own error: the root formatter's shape, nothing of idem's.
    const failed = await post({ 'idempotency-key': 'canary-key-shape-1' }, -1);
    expect(failed.status).toBe(400);
    expect(failed.body.error.data.root).toBe(true);
    expect(failed.body.error.data.idem).toBeUndefined();
    // Its replay: still the handler's error, still the root formatter's shape.
    const replayed = await post({ 'idempotency-key': 'canary-key-shape-1' }, -1);
    expect(replayed.body.error.data.root).toBe(true);
    expect(replayed.body.error.data.idem).toBeUndefined();
    // The same key with another input: idem's shape again.
    const reused = await post({ 'idempotency-key': 'canary-key-shape-1' }, 2);
    expect(reused.status).toBe(422);
    expect(reused.body.error.data.idem).toMatchObject({ reason: 'IDEMPOTENCY_KEY_REUSED' });
    expect(reused.body.error.data.root).toBeUndefined();
  });
});
