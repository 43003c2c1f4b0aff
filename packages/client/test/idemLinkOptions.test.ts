/** The link's options as a caller sees them: logging, switches, the deadline, budgets. */
import { createTRPCClient, httpBatchLink } from '@trpc/client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  findIdemClientError,
  idemFetch,
  idemLink,
  IDEM_LINK_DEFAULTS,
  type IdemEvent,
  type IdemLinkOptions,
  type IdemLogger,
} from '../src/index.js';
import { htmlPage } from '@idem/fixtures';
import { startShopServer, type ShopServer } from './fixtures/shopServer.js';
import type { ShopRouter } from './fixtures/shopRouter.js';

let shop: ShopServer;
beforeAll(async () => {
  shop = await startShopServer();
});
afterAll(() => shop.close());
afterEach(() => shop.reset());

function recordingLogger() {
  const lines: [level: 'info' | 'warn', message: string, event: IdemEvent][] = [];
  const logger: IdemLogger = {
    info: (message, event) => lines.push(['info', message, event]),
    warn: (message, event) => lines.push(['warn', message, event]),
  };
  return { lines, logger };
}

describe('idemLink options', () => {
  it('states its defaults: 3 attempts, 10 s per attempt, 30 s overall, no 500s', () => {
    expect(IDEM_LINK_DEFAULTS).toEqual({
      maxAttempts: 3,
      attemptTimeoutMs: 10_000,
      deadlineMs: 30_000,
      retryOn500: false,
      retryQueries: true,
    });
  });

  it('logs every retry (info) and every give-up that matters (warn)', async () => {
    const { lines, logger } = recordingLogger();
    const { trpc } = shop.client({ logger });
    shop.proxy.plan = () => htmlPage(503, 'Service Unavailable');
    await trpc.orders.create.mutate({ sku: 'tea', quantity: 1 }).catch(() => undefined);
    shop.proxy.plan = () => ({ type: 'pass' });
    await trpc.orders.create.mutate({ sku: 'tea', quantity: -1 }).catch(() => undefined); // a 400
    expect(
      lines.map(([level, , event]) => [level, event.type, event.attempt, event.failure]),
    ).toEqual([
      ['info', 'retry', 1, 'http-503'],
      ['info', 'retry', 2, 'http-503'],
      ['warn', 'give-up', 3, 'http-503'],
    ]);
    expect(lines[0]?.[1]).toMatch(/orders\.create attempt 1 failed \(http-503\); retrying in 0 ms/);
    expect(lines[2]?.[1]).toMatch(/not retried: attempts-exhausted/);
  });

  it('gives up at once, with a clear error, when Retry-After exceeds what the deadline has left', async () => {
    const { trpc, giveUps } = shop.client({ deadlineMs: 5_000 });
    shop.proxy.plan = () => ({
      type: 'respond',
      status: 503,
      headers: { 'retry-after': '120', 'content-type': 'text/html' },
      body: '<h1>maintenance</h1>',
    });
    const started = performance.now();
    const error = await trpc.orders.create
      .mutate({ sku: 'tea', quantity: 1 })
      .catch((e: unknown) => e);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(findIdemClientError(error)?.code).toBe('RETRY_AFTER_EXCEEDS_DEADLINE');
    expect((error as Error).message).toMatch(
      /asked to wait 120000 ms, the deadline has \d+ ms left/,
    );
    expect(giveUps.map((e) => e.because)).toEqual(['retry-after-exceeds-deadline']);
    expect(shop.proxy.requests).toHaveLength(1);
  });

  it('leaves queries alone with retryQueries: false', async () => {
    const { trpc, retries } = shop.client({ retryQueries: false });
    shop.proxy.plan = ({ n }) =>
      n === 1 ? htmlPage(503, 'Service Unavailable') : { type: 'pass' };
    await expect(trpc.orders.list.query()).rejects.toThrow();
    expect(retries).toEqual([]);
  });

  it('turns retries off with maxAttempts: 1, keeping the key', async () => {
    const { trpc, giveUps } = shop.client({ maxAttempts: 1 });
    shop.proxy.plan = () => htmlPage(502, 'Bad Gateway');
    await expect(trpc.orders.create.mutate({ sku: 'tea', quantity: 1 })).rejects.toThrow();
    expect(shop.proxy.requests).toHaveLength(1);
    expect(shop.proxy.requests[0]?.headers['idempotency-key']).toBeDefined();
    expect(giveUps.map((e) => e.because)).toEqual(['attempts-exhausted']);
  });

  it('gives each client made from one link its own budget by default', async () => {
    const url = `${shop.proxy.origin}/trpc`;
    const link = idemLink<ShopRouter>({
      http: { url },
      idempotent: { 'orders.create': true, 'payments.charge': true, 'payments.refuse': true },
      backoff: () => 0,
      maxAttempts: 200,
    });
    const make = () =>
      createTRPCClient<ShopRouter>({ links: [link, httpBatchLink({ url, fetch: idemFetch() })] });
    shop.proxy.plan = () => htmlPage(503, 'Service Unavailable');
    const first = await make()
      .orders.create.mutate({ sku: 'a', quantity: 1 })
      .catch((e: unknown) => e);
    expect(findIdemClientError(first)?.code).toBe('BUDGET_EXHAUSTED');
    expect(shop.proxy.requests).toHaveLength(101); // 1 + 100 retries at 5 of 500 tokens
    shop.proxy.requests.length = 0;
    await make()
      .orders.create.mutate({ sku: 'b', quantity: 1 })
      .catch(() => undefined);
    expect(shop.proxy.requests).toHaveLength(101);
  });

  it('refuses a list entry that is neither true nor { key }: it would key and retry that path', () => {
    const http = { url: 'http://127.0.0.1:1/trpc' };
    const complete = { 'orders.create': true, 'payments.charge': true, 'payments.refuse': true };
    // Untyped lists (plain JavaScript, or `as any`): the link reads every entry it keeps as
    // "idempotent", so one that says otherwise must not be kept.
    const untyped = (extra: Record<string, unknown>) =>
      ({ ...complete, ...extra }) as unknown as IdemLinkOptions<ShopRouter>['idempotent'];
    expect(() =>
      idemLink<ShopRouter>({ http, idempotent: untyped({ 'orders.cancel': false }) }),
    ).toThrow(
      "idemLink: idempotent['orders.cancel'] must be true or { key: (input) => string }, got false",
    );
    expect(() => idemLink<ShopRouter>({ http, idempotent: untyped({ ping: null }) })).toThrow(
      TypeError,
    );
    expect(() =>
      idemLink<ShopRouter>({ http, idempotent: untyped({ ping: { key: 'ping-1' } }) }),
    ).toThrow(TypeError);
  });

  it('reads an undefined entry as absent: that mutation gets no key and no retry', async () => {
    const { trpc, retries } = shop.client({
      idempotent: {
        'orders.create': true,
        'payments.charge': true,
        'payments.refuse': true,
        'orders.cancel': undefined,
      },
    });
    shop.proxy.plan = ({ n }) => (n === 1 ? htmlPage(502, 'Bad Gateway') : { type: 'pass' });
    await expect(trpc.orders.cancel.mutate({ orderId: 'o-1' })).rejects.toThrow();
    expect(shop.proxy.requests).toHaveLength(1);
    expect(shop.proxy.requests[0]?.headers['idempotency-key']).toBeUndefined();
    expect(retries).toEqual([]);
    expect(shop.calls).toEqual([]);
  });

  it('refuses nonsense options when the link is made', () => {
    const http = { url: 'http://127.0.0.1:1/trpc' };
    const idempotent = {
      'orders.create': true,
      'payments.charge': true,
      'payments.refuse': true,
    } as const;
    expect(() => idemLink<ShopRouter>({ http, idempotent, maxAttempts: 0 })).toThrow(RangeError);
    expect(() => idemLink<ShopRouter>({ http, idempotent, deadlineMs: -1 })).toThrow(RangeError);
    expect(() => idemLink<ShopRouter>({ http, idempotent, attemptTimeoutMs: Number.NaN })).toThrow(
      RangeError,
    );
    // Past 2^31 - 1 ms a timer fires after 1 ms: every attempt would time out at once.
    expect(() => idemLink<ShopRouter>({ http, idempotent, attemptTimeoutMs: 2 ** 31 })).toThrow(
      'attemptTimeoutMs must be at most 2147483647 ms (the longest a timer can wait), got 2147483648',
    );
    expect(() => idemLink<ShopRouter>({ http, idempotent, deadlineMs: 1e10 })).toThrow(
      'deadlineMs must be at most 2147483647 ms',
    );
    expect(() =>
      idemLink<ShopRouter>({
        http,
        idempotent,
        attemptTimeoutMs: 2 ** 31 - 1,
        deadlineMs: 2 ** 31 - 1,
      }),
    ).not.toThrow();
  });
});
