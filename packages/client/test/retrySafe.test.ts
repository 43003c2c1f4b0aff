/**
 * Retry-safe mutations (`retrySafe()` on the server) through the link, against a tRPC server
 * behind the fault proxy: retried without a key on the failures idempotent mutations are retried
 * on, with the same policy, while a `retryUnsafe()` mutation is never sent again once it may
 * have reached the server.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { IDEMPOTENCY_KEY_HEADER, type IdemMeta } from '@idem/contract';
import { FaultProxy, htmlPage, listen } from '@idem/fixtures';
import { retrySafe, retryUnsafe } from '@idem/server';
import { createTRPCClient, httpBatchLink, TRPCClientError } from '@trpc/client';
import { initTRPC } from '@trpc/server';
import { createHTTPServer } from '@trpc/server/adapters/standalone';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  idemFetch,
  idemLink,
  isIdemClientError,
  type IdemGiveUpEvent,
  type IdemLinkOptions,
  type IdemRetryEvent,
  type IdempotentProcedures,
  type RetrySafeProcedures,
} from '../src/index.js';

interface Call {
  path: string;
  headers: IncomingHttpHeaders;
}

const t = initTRPC.context<{ headers: IncomingHttpHeaders }>().meta<IdemMeta>().create();
function createCartRouter(calls: Call[]) {
  return t.router({
    cart: t.router({
      remove: t.procedure
        .input(z.object({ itemId: z.string() }))
        .concat(retrySafe('deletes by id; a second delete finds nothing'))
        .mutation(({ ctx, input }) => {
          calls.push({ path: 'cart.remove', headers: ctx.headers });
          return { removed: input.itemId };
        }),
      checkout: t.procedure
        .input(z.object({ cartId: z.string() }))
        .concat(retryUnsafe('charges the card on every call'))
        .mutation(({ ctx, input }) => {
          calls.push({ path: 'cart.checkout', headers: ctx.headers });
          return { charged: input.cartId };
        }),
    }),
  });
}
type CartRouter = ReturnType<typeof createCartRouter>;

const calls: Call[] = [];
let proxy: FaultProxy;
let closeServer: () => Promise<void>;

beforeAll(async () => {
  const server = await listen(
    createHTTPServer({
      router: createCartRouter(calls),
      basePath: '/trpc/',
      createContext: ({ req }) => ({ headers: req.headers }),
    }),
  );
  closeServer = () => server.close();
  proxy = await FaultProxy.start(server.origin);
});
afterAll(async () => {
  await proxy.close();
  await closeServer();
});
afterEach(() => {
  calls.length = 0;
  proxy.requests.length = 0;
  proxy.plan = () => ({ type: 'pass' });
});

function client(overrides: Partial<IdemLinkOptions<CartRouter>> = {}) {
  const retries: IdemRetryEvent[] = [];
  const giveUps: IdemGiveUpEvent[] = [];
  const url = `${proxy.origin}/trpc`;
  const trpc = createTRPCClient<CartRouter>({
    links: [
      idemLink<CartRouter>({
        http: { url },
        idempotent: {},
        retrySafe: { 'cart.remove': true },
        backoff: () => 0,
        onRetry: (event) => retries.push(event),
        onGiveUp: (event) => giveUps.push(event),
        ...overrides,
      }),
      httpBatchLink({ url, fetch: idemFetch() }),
    ],
  });
  return { trpc, retries, giveUps };
}

const keyOf = (headers: IncomingHttpHeaders) => headers[IDEMPOTENCY_KEY_HEADER.toLowerCase()];

describe('a retry-safe mutation', () => {
  it('is retried on a 503 and a 429, and never carries an Idempotency-Key', async () => {
    const { trpc, retries } = client();
    proxy.plan = ({ n }) =>
      n === 1
        ? htmlPage(503, 'Service Temporarily Unavailable')
        : n === 2
          ? { type: 'respond', status: 429, headers: { 'retry-after': '0' }, body: 'slow down' }
          : { type: 'pass' };
    await expect(trpc.cart.remove.mutate({ itemId: 'i1' })).resolves.toEqual({ removed: 'i1' });
    expect(retries.map((e) => [e.operation, e.failure])).toEqual([
      ['retry-safe-mutation', 'http-503'],
      ['retry-safe-mutation', 'http-429'],
    ]);
    expect(proxy.requests).toHaveLength(3);
    expect(proxy.requests.map((r) => keyOf(r.headers))).toEqual([undefined, undefined, undefined]);
    expect(calls.map((c) => [c.path, keyOf(c.headers)])).toEqual([['cart.remove', undefined]]);
  });

  it('is sent again after a response lost on the way back: a second run changes nothing', async () => {
    const { trpc, retries } = client();
    proxy.plan = ({ n }) => (n === 1 ? { type: 'drop-response' } : { type: 'pass' });
    await expect(trpc.cart.remove.mutate({ itemId: 'i2' })).resolves.toEqual({ removed: 'i2' });
    expect(retries.map((e) => e.failure)).toEqual(['connection-lost']);
    expect(calls.map((c) => c.path)).toEqual(['cart.remove', 'cart.remove']);
  });

  it('gives up like an idempotent mutation: after maxAttempts', async () => {
    const { trpc, giveUps } = client({ maxAttempts: 2 });
    proxy.plan = () => htmlPage(503, 'Service Temporarily Unavailable');
    const error = await trpc.cart.remove.mutate({ itemId: 'i3' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TRPCClientError);
    const cause = (error as TRPCClientError<CartRouter>).cause;
    expect(isIdemClientError(cause) && cause.code).toBe('ATTEMPTS_EXHAUSTED');
    expect(proxy.requests).toHaveLength(2);
    expect(giveUps.map((e) => [e.operation, e.because, e.attempt])).toEqual([
      ['retry-safe-mutation', 'attempts-exhausted', 2],
    ]);
  });

  it('is not retried on a failure no call is retried on (a 400)', async () => {
    const { trpc, retries } = client();
    await expect(trpc.cart.remove.mutate({ itemId: 1 as never })).rejects.toThrow();
    expect(proxy.requests).toHaveLength(1);
    expect(retries).toEqual([]);
  });
});

describe('a retryUnsafe() mutation', () => {
  it('is never sent again once it may have reached the server', async () => {
    const { trpc, retries, giveUps } = client();
    proxy.plan = () => htmlPage(503, 'Service Temporarily Unavailable');
    await expect(trpc.cart.checkout.mutate({ cartId: 'c1' })).rejects.toThrow();
    proxy.plan = () => ({ type: 'drop-response' });
    await expect(trpc.cart.checkout.mutate({ cartId: 'c2' })).rejects.toThrow();
    expect(proxy.requests).toHaveLength(2);
    expect(calls.map((c) => c.path)).toEqual(['cart.checkout']);
    expect(retries).toEqual([]);
    expect(giveUps.map((e) => [e.operation, e.because, e.failure])).toEqual([
      ['mutation', 'unsafe', 'http-503'],
      ['mutation', 'unsafe', 'connection-lost'],
    ]);
  });
});

describe('the retrySafe option', () => {
  const http = { url: 'http://127.0.0.1:1/trpc' };
  // Lists as plain JavaScript (or `as any`) could pass them: the types refuse these.
  const untyped = (list: Record<string, unknown>) =>
    list as unknown as RetrySafeProcedures<CartRouter>;
  const untypedIdempotent = (list: Record<string, unknown>) =>
    list as unknown as IdempotentProcedures<CartRouter>;

  it('refuses an entry that is not true, and a path also listed as idempotent', () => {
    expect(() =>
      idemLink<CartRouter>({ http, idempotent: {}, retrySafe: untyped({ 'cart.remove': 1 }) }),
    ).toThrow("idemLink: retrySafe['cart.remove'] must be true, got 1");
    expect(() =>
      idemLink<CartRouter>({
        http,
        idempotent: untypedIdempotent({ 'cart.remove': true }),
        retrySafe: { 'cart.remove': true },
      }),
    ).toThrow(/cart\.remove is in both idempotent and retrySafe/);
    expect(() =>
      idemLink<CartRouter>({
        http,
        idempotent: {},
        retrySafe: untyped({ 'cart.remove': undefined }),
      }),
    ).not.toThrow();
  });
});
