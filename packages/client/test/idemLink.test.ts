/**
 * The link against a plain tRPC server (no idem middleware) behind the fault proxy: what goes on
 * the wire, which failures are retried, and how batching is kept away from keyed mutations. The
 * end-to-end suite (`packages/tests/test/idemLinkEndToEnd.test.ts`) repeats the important cases
 * against the real middleware on PostgreSQL.
 */
import { IDEMPOTENCY_KEY_HEADER } from '@idem/contract';
import { httpBatchLink, TRPCClientError } from '@trpc/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  CLIENT_METRICS,
  findIdemClientError,
  idemFetch,
  isIdemClientError,
  RetryBudget,
  withIdempotencyKey,
} from '../src/index.js';
import { htmlPage, testMeter, type FaultProxy } from '@idem/fixtures';
import { startShopServer, type ShopServer } from './fixtures/shopServer.js';
import type { RecordedCall, ShopRouter } from './fixtures/shopRouter.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let shop: ShopServer;
let calls: RecordedCall[];
let proxy: FaultProxy;
let client: ShopServer['client'];

beforeAll(async () => {
  shop = await startShopServer();
  ({ calls, proxy } = shop);
  client = shop.client.bind(shop);
});
afterAll(() => shop.close());
afterEach(() => shop.reset());

const header = (call: { headers: Record<string, unknown> } | undefined, name: string) =>
  call?.headers[name.toLowerCase()];

describe('idemLink on the wire', () => {
  it('sends a key, a request id, the attempt number and the remaining deadline', async () => {
    const { trpc } = client({ deadlineMs: 20_000 });
    await trpc.orders.create.mutate({ sku: 'tea', quantity: 1 });
    const [call] = calls;
    expect(header(call, IDEMPOTENCY_KEY_HEADER)).toMatch(UUID);
    expect(header(call, 'X-Request-Id')).toMatch(UUID);
    expect(header(call, 'X-Request-Id')).not.toBe(header(call, IDEMPOTENCY_KEY_HEADER));
    expect(header(call, 'Idempotency-Attempt')).toBe('1');
    const remaining = Number(header(call, 'Idempotency-Timeout-Ms'));
    expect(remaining).toBeGreaterThan(19_000);
    expect(remaining).toBeLessThanOrEqual(20_000);
  });

  it('makes one random key per call, never one per attempt', async () => {
    const { trpc } = client();
    proxy.plan = ({ n }) =>
      n <= 2 ? htmlPage(503, 'Service Temporarily Unavailable') : { type: 'pass' };
    await trpc.orders.create.mutate({ sku: 'tea', quantity: 1 });
    await trpc.orders.create.mutate({ sku: 'tea', quantity: 1 });
    const sent = proxy.requests.map((r) => [
      header(r, IDEMPOTENCY_KEY_HEADER),
      header(r, 'Idempotency-Attempt'),
    ]);
    expect(sent.map(([, attempt]) => attempt)).toEqual(['1', '2', '3', '1']);
    expect(new Set(sent.slice(0, 3).map(([key]) => key)).size).toBe(1);
    expect(sent[3]?.[0]).not.toBe(sent[0]?.[0]);
    expect(new Set(proxy.requests.map((r) => header(r, 'X-Request-Id'))).size).toBe(4);
  });

  it('uses the caller’s key, else the key function (called once per call)', async () => {
    let derived = 0;
    const { trpc } = client({
      idempotent: {
        'orders.create': {
          key: (input) => {
            derived++;
            return `order-${input.sku}-${input.quantity}`;
          },
        },
        'payments.charge': true,
        'payments.refuse': true,
      },
    });
    proxy.plan = ({ n }) => (n === 1 ? htmlPage(502, 'Bad Gateway') : { type: 'pass' });
    await trpc.orders.create.mutate({ sku: 'tea', quantity: 2 });
    await trpc.orders.create.mutate(
      { sku: 'tea', quantity: 2 },
      withIdempotencyKey('order-confirm-42'),
    );
    expect(proxy.requests.map((r) => header(r, IDEMPOTENCY_KEY_HEADER))).toEqual([
      'order-tea-2',
      'order-tea-2',
      'order-confirm-42',
    ]);
    expect(derived).toBe(1);
  });

  it('refuses a malformed key before sending anything', async () => {
    const { trpc } = client({
      idempotent: {
        'orders.create': { key: () => 'has space' },
        'payments.charge': true,
        'payments.refuse': true,
      },
    });
    const error = await trpc.orders.create
      .mutate({ sku: 'tea', quantity: 1 })
      .catch((e: unknown) => e);
    expect(findIdemClientError(error)?.code).toBe('INVALID_KEY');
    expect(() => withIdempotencyKey('é')).toThrow(/visible ASCII/);
    expect(proxy.requests).toHaveLength(0);
  });

  it('replaces any Idempotency-Key the caller’s headers carry, in any spelling', async () => {
    const { trpc } = client({
      http: {
        url: `${proxy.origin}/trpc`,
        headers: { 'idempotency-key': 'stale', authorization: 'Bearer t' },
      },
    });
    await trpc.orders.create.mutate({ sku: 'tea', quantity: 1 }, withIdempotencyKey('fresh'));
    expect(header(calls[0], IDEMPOTENCY_KEY_HEADER)).toBe('fresh');
    expect(header(calls[0], 'authorization')).toBe('Bearer t');
  });
});

describe('idemLink retries', () => {
  it('classifies an HTML 502 page by its status and retries it', async () => {
    const { trpc, retries } = client();
    proxy.plan = ({ n }) => (n === 1 ? htmlPage(502, 'Bad Gateway') : { type: 'pass' });
    await expect(trpc.payments.charge.mutate({ orderId: 'o1', amountCents: 100 })).resolves.toEqual(
      {
        chargeId: 'ch-o1',
      },
    );
    expect(retries.map((e) => [e.failure, e.status])).toEqual([['http-502', 502]]);
  });

  it('honours Retry-After on a 429 (the hook reports the wait)', async () => {
    const { trpc, retries } = client();
    proxy.plan = ({ n }) =>
      n === 1
        ? { type: 'respond', status: 429, headers: { 'retry-after': '1' }, body: 'slow down' }
        : { type: 'pass' };
    await trpc.orders.create.mutate({ sku: 'tea', quantity: 1 });
    expect(retries.map((e) => [e.failure, e.delayMs])).toEqual([['http-429', 1000]]);
  });

  it('gives up after 3 attempts, keeping the last server error’s data', async () => {
    const { trpc, giveUps } = client();
    proxy.plan = () => ({
      type: 'respond',
      status: 503,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        error: {
          code: -32603,
          message: 'down',
          data: { code: 'SERVICE_UNAVAILABLE', httpStatus: 503 },
        },
      }),
    });
    const error = await trpc.orders.create
      .mutate({ sku: 'tea', quantity: 1 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TRPCClientError);
    const clientError = error as TRPCClientError<ShopRouter>;
    expect(clientError.data?.httpStatus).toBe(503);
    expect(isIdemClientError(clientError.cause) && clientError.cause.code).toBe(
      'ATTEMPTS_EXHAUSTED',
    );
    expect(clientError.message).toMatch(/gave up after 3 attempts/);
    expect(proxy.requests).toHaveLength(3);
    expect(giveUps.map((e) => [e.because, e.attempt])).toEqual([['attempts-exhausted', 3]]);
  });

  it('never retries a 422 key reused or a 400', async () => {
    const { trpc, retries } = client();
    for (const reason of ['IDEMPOTENCY_KEY_REUSED', 'IDEMPOTENCY_KEY_MISSING']) {
      const error = await trpc.payments.refuse.mutate({ reason }).catch((e: unknown) => e);
      expect((error as TRPCClientError<ShopRouter>).data?.httpStatus).toBe(
        reason === 'IDEMPOTENCY_KEY_REUSED' ? 422 : 400,
      );
    }
    await expect(trpc.orders.create.mutate({ sku: 'tea', quantity: -1 })).rejects.toThrow();
    expect(proxy.requests).toHaveLength(3);
    expect(retries).toEqual([]);
  });

  it('retries an attempt that outlives its timeout, with the same key', async () => {
    const { trpc, retries } = client({ attemptTimeoutMs: 1_000 });
    proxy.plan = ({ n }) => (n === 1 ? { type: 'delay', ms: 3_000 } : { type: 'pass' });
    await trpc.orders.create.mutate({ sku: 'tea', quantity: 1 });
    expect(retries.map((e) => e.failure)).toEqual(['timeout']);
    const keys = proxy.requests.map((r) => header(r, IDEMPOTENCY_KEY_HEADER));
    expect(keys).toHaveLength(2);
    expect(keys[0]).toBe(keys[1]);
  });

  it('never resends a mutation without a key after a dropped response', async () => {
    const { trpc, retries, giveUps } = client();
    proxy.plan = () => ({ type: 'drop-response' });
    const error = await trpc.orders.cancel.mutate({ orderId: 'o1' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TRPCClientError);
    expect(calls.filter((c) => c.path === 'orders.cancel')).toHaveLength(1);
    expect(retries).toEqual([]);
    expect(giveUps.map((e) => [e.because, e.failure])).toEqual([['unsafe', 'connection-lost']]);
  });

  it('resends a mutation without a key when no connection was made', async () => {
    let refused = 0;
    const url = `${proxy.origin}/trpc`;
    const flaky: typeof fetch = async (input, init) => {
      if (refused++ === 0) {
        throw new TypeError('fetch failed', {
          cause: Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), {
            code: 'ECONNREFUSED',
          }),
        });
      }
      return fetch(input, init);
    };
    const { trpc, retries } = client({}, httpBatchLink({ url, fetch: idemFetch(flaky) }));
    await expect(trpc.orders.cancel.mutate({ orderId: 'o2' })).resolves.toEqual({
      cancelled: 'o2',
    });
    expect(retries.map((e) => [e.operation, e.failure])).toEqual([
      ['mutation', 'connection-refused'],
    ]);
    expect(calls).toHaveLength(1);
  });

  it('retries queries through the caller’s chain', async () => {
    const { trpc, retries } = client();
    proxy.plan = ({ n }) => (n === 1 ? htmlPage(504, 'Gateway Time-out') : { type: 'pass' });
    await expect(trpc.orders.list.query()).resolves.toEqual(['order-1']);
    expect(retries.map((e) => [e.operation, e.failure])).toEqual([['query', 'http-504']]);
  });

  it('stops at once when the caller aborts during a backoff sleep', async () => {
    const controller = new AbortController();
    const { trpc } = client({
      backoff: () => 5_000,
      onRetry: () => queueMicrotask(() => controller.abort()),
    });
    proxy.plan = () => htmlPage(503, 'Service Unavailable');
    const started = performance.now();
    const error = await trpc.orders.create
      .mutate({ sku: 'tea', quantity: 1 }, { signal: controller.signal })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TRPCClientError);
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(proxy.requests).toHaveLength(1);
  });

  it('shares one budget across calls: when it is spent, retries stop', async () => {
    const budget = new RetryBudget({ capacity: 10 });
    const { trpc, giveUps } = client({ budget });
    proxy.plan = () => htmlPage(503, 'Service Unavailable');
    await trpc.orders.create.mutate({ sku: 'a', quantity: 1 }).catch(() => undefined);
    await trpc.orders.create.mutate({ sku: 'b', quantity: 1 }).catch(() => undefined);
    expect(budget.tokens).toBe(0);
    expect(proxy.requests).toHaveLength(4); // 3 attempts, then 1: the second call could not pay
    expect(giveUps.map((e) => e.because)).toEqual(['attempts-exhausted', 'budget-exhausted']);
  });

  it('counts attempts, retries by reason, budget exhaustion and give-ups as metrics', async () => {
    const metrics = testMeter();
    const { trpc } = client({ budget: new RetryBudget({ capacity: 10 }), meter: metrics.meter });
    proxy.plan = () => htmlPage(503, 'Service Unavailable');
    await trpc.orders.create.mutate({ sku: 'a', quantity: 1 }).catch(() => undefined);
    await trpc.orders.create.mutate({ sku: 'b', quantity: 1 }).catch(() => undefined);
    expect(await metrics.sum(CLIENT_METRICS.attempts)).toBe(proxy.requests.length);
    expect(await metrics.sum(CLIENT_METRICS.retries, { 'idem.failure': 'http-503' })).toBe(2);
    expect(await metrics.sum(CLIENT_METRICS.budgetExhausted)).toBe(1);
    expect(await metrics.sum(CLIENT_METRICS.giveUps, { 'idem.reason': 'attempts-exhausted' })).toBe(
      1,
    );
    expect(await metrics.sum(CLIENT_METRICS.giveUps)).toBe(2);
  });
});

describe('idemLink with httpBatchLink in the chain', () => {
  it('sends concurrent keyed mutations as separate requests, each with its own key', async () => {
    const { trpc } = client();
    await Promise.all([
      trpc.orders.create.mutate({ sku: 'a', quantity: 1 }, withIdempotencyKey('order-a')),
      trpc.orders.create.mutate({ sku: 'b', quantity: 1 }, withIdempotencyKey('order-b')),
      trpc.payments.charge.mutate({ orderId: 'o1', amountCents: 5 }),
      trpc.orders.list.query(),
      trpc.orders.list.query(),
    ]);
    const keyed = proxy.requests.filter((r) => r.method === 'POST');
    expect(keyed).toHaveLength(3);
    expect(keyed.every((r) => !r.url.includes('batch=1'))).toBe(true);
    const keys = keyed.map((r) => header(r, IDEMPOTENCY_KEY_HEADER));
    expect(keys).toContain('order-a');
    expect(keys).toContain('order-b');
    expect(new Set(keys).size).toBe(3);
    const queries = proxy.requests.filter((r) => r.method === 'GET');
    expect(queries).toHaveLength(1); // the chain still batches what it may
    expect(queries[0]?.url).toContain('batch=1');
    expect(header(queries[0], IDEMPOTENCY_KEY_HEADER)).toBeUndefined();
  });
});
