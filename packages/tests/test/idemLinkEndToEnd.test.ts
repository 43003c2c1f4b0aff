/**
 * End to end: this link, a real tRPC server with idem's middleware on PostgreSQL, and a
 * fault-injecting proxy between them. Executions are counted twice: by the handler, in memory,
 * and by the rows it wrote.
 */
import { randomUUID } from 'node:crypto';
import { IDEMPOTENCY_KEY_HEADER } from '@idem/contract';
import { createPostgresJsStore, migrate } from '@idem/store-drizzle/postgres-js';
import {
  createTestDatabase,
  FaultProxy,
  htmlPage,
  listen,
  postgresAvailable,
  type ProxiedRequest,
  type TestDatabase,
} from '@idem/fixtures';
import { createTRPCClient, httpBatchLink, TRPCClientError } from '@trpc/client';
import { and, count, eq } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import {
  idemErrorOf,
  idemFetch,
  idemLink,
  withIdempotencyKey,
  type IdemGiveUpEvent,
  type IdemLinkOptions,
  type IdemRetryEvent,
} from '@idem/client';
import {
  createE2eOrdersTable,
  createOrdersApp,
  e2eOrders,
  type OrdersRouter,
} from './fixtures/ordersApp.js';

const available = await postgresAvailable();

describe.skipIf(!available)('idemLink end to end (PostgreSQL)', () => {
  let database: TestDatabase;
  let sql: postgres.Sql;
  let db: ReturnType<typeof drizzle>;
  let app: ReturnType<typeof createOrdersApp>;
  let server: Awaited<ReturnType<typeof listen>>;
  let proxy: FaultProxy;

  beforeAll(async () => {
    database = await createTestDatabase('idem_client');
    sql = postgres(database.url, { max: 10, onnotice: () => {} });
    db = drizzle(sql);
    await migrate(db);
    await db.execute(createE2eOrdersTable);
    app = createOrdersApp(createPostgresJsStore(db), db);
    server = await listen(app.server);
    proxy = await FaultProxy.start(server.origin);
  });
  afterAll(async () => {
    await proxy?.close();
    await server?.close();
    await sql?.end({ timeout: 2 });
    await database?.drop();
  });
  afterEach(() => {
    proxy.requests.length = 0;
    proxy.plan = () => ({ type: 'pass' });
    for (const path of Object.keys(app.executions)) delete app.executions[path];
  });

  /** A client for a fresh account (its own key scope), through the proxy (or `via`). */
  function client(overrides: Partial<IdemLinkOptions<OrdersRouter>> = {}, via = proxy) {
    const account = `acct_${randomUUID()}`;
    const retries: IdemRetryEvent[] = [];
    const giveUps: IdemGiveUpEvent[] = [];
    const url = `${via.origin}/trpc`;
    const headers = { 'x-account': account };
    const trpc = createTRPCClient<OrdersRouter>({
      links: [
        idemLink<OrdersRouter>({
          http: { url, headers },
          idempotent: { 'orders.create': true },
          backoff: () => 10,
          onRetry: (event) => retries.push(event),
          onGiveUp: (event) => giveUps.push(event),
          ...overrides,
        }),
        httpBatchLink({ url, headers, fetch: idemFetch() }),
      ],
    });
    const rows = async (procedure = 'orders.create') => {
      const [row] = await db
        .select({ n: count() })
        .from(e2eOrders)
        .where(and(eq(e2eOrders.account, account), eq(e2eOrders.procedure, procedure)));
      return row!.n;
    };
    return { trpc, account, retries, giveUps, rows };
  }

  const keyOf = (r: ProxiedRequest | undefined) => r?.headers[IDEMPOTENCY_KEY_HEADER.toLowerCase()];
  const replayed = (r: ProxiedRequest | undefined) => r?.upstream?.headers['idempotent-replayed'];

  it('(1) retries a response dropped after the commit with the same key, and gets the replay', async () => {
    const { trpc, retries, rows } = client();
    proxy.plan = ({ n }) => (n === 1 ? { type: 'drop-response' } : { type: 'pass' });
    const result = await trpc.orders.create.mutate({ sku: 'tea', quantity: 1 });

    const [first, second] = proxy.requests;
    expect(proxy.requests).toHaveLength(2);
    expect(keyOf(first)).toBe(keyOf(second));
    expect(first?.upstream?.status).toBe(200); // the server had committed
    expect(replayed(second)).toBe('true');
    expect(JSON.parse(second!.upstream!.body).result.data).toEqual(result);
    expect(retries.map((e) => e.failure)).toEqual(['connection-lost']);
    expect(app.executions['orders.create']).toBe(1);
    expect(await rows()).toBe(1);
  });

  it('(2) rides out a 503 burst, then succeeds once', async () => {
    const { trpc, retries, rows } = client();
    proxy.plan = ({ n }) =>
      n <= 2 ? htmlPage(503, 'Service Temporarily Unavailable') : { type: 'pass' };
    await trpc.orders.create.mutate({ sku: 'tea', quantity: 1 });
    expect(retries.map((e) => [e.attempt, e.failure])).toEqual([
      [1, 'http-503'],
      [2, 'http-503'],
    ]);
    expect(new Set(proxy.requests.map(keyOf)).size).toBe(1);
    expect(proxy.requests.map((r) => r.headers['idempotency-attempt'])).toEqual(['1', '2', '3']);
    expect(app.executions['orders.create']).toBe(1);
    expect(await rows()).toBe(1);
  });

  it('(3) honours Retry-After on a 429', async () => {
    const { trpc, retries, rows } = client();
    proxy.plan = ({ n }) =>
      n === 1
        ? {
            type: 'respond',
            status: 429,
            headers: { 'retry-after': '1', 'content-type': 'text/plain' },
            body: 'slow down',
          }
        : { type: 'pass' };
    await trpc.orders.create.mutate({ sku: 'tea', quantity: 1 });
    expect(retries.map((e) => [e.failure, e.status, e.delayMs])).toEqual([['http-429', 429, 1000]]);
    expect(await rows()).toBe(1);
  });

  it('(4) retries a response slower than the per-attempt timeout with the same key: one execution', async () => {
    const { trpc, retries, rows } = client({ attemptTimeoutMs: 1_000 });
    proxy.plan = ({ n }) => (n === 1 ? { type: 'delay', ms: 3_000 } : { type: 'pass' });
    const result = await trpc.orders.create.mutate({ sku: 'tea', quantity: 1 });
    expect(retries.map((e) => e.failure)).toEqual(['timeout']);
    expect(keyOf(proxy.requests[0])).toBe(keyOf(proxy.requests[1]));
    expect(replayed(proxy.requests[1])).toBe('true');
    expect(result.sku).toBe('tea');
    expect(app.executions['orders.create']).toBe(1);
    expect(await rows()).toBe(1);
  });

  it('(4b) waits out 409 in progress while the first attempt still runs, then gets the replay', async () => {
    // A 409 in progress answers a duplicate while the first attempt holds the key: the key
    // claimed first (at commit, the duplicate would run its handler and wait at its record).
    const claimFirst = createOrdersApp(createPostgresJsStore(db), db, { claim: 'first' });
    const server = await listen(claimFirst.server);
    const via = await FaultProxy.start(server.origin);
    onTestFinished(async () => {
      await via.close();
      await server.close();
    });
    const { trpc, retries, rows } = client(
      { attemptTimeoutMs: 800, maxAttempts: 5, deadlineMs: 15_000 },
      via,
    );
    const result = await trpc.orders.create.mutate({ sku: 'slow', quantity: 1 });
    expect(result.sku).toBe('slow');
    expect(retries[0]?.failure).toBe('timeout');
    expect(
      retries.some(
        (e) => e.failure === 'in-progress' && e.reason === 'IDEMPOTENCY_REQUEST_IN_PROGRESS',
      ),
    ).toBe(true);
    expect(new Set(via.requests.map(keyOf)).size).toBe(1);
    expect(claimFirst.executions['orders.create']).toBe(1);
    expect(await rows()).toBe(1);
  });

  it('(5) classifies an HTML 502 page by its status and retries it', async () => {
    const { trpc, retries, rows } = client();
    proxy.plan = ({ n }) => (n === 1 ? htmlPage(502, 'Bad Gateway') : { type: 'pass' });
    await trpc.orders.create.mutate({ sku: 'tea', quantity: 1 });
    expect(retries.map((e) => [e.failure, e.status])).toEqual([['http-502', 502]]);
    expect(await rows()).toBe(1);
  });

  it('(6) never retries 422 key reused, 400 key missing, a bad input or an auth failure', async () => {
    const { trpc, retries, rows } = client();
    await trpc.orders.create.mutate(
      { sku: 'tea', quantity: 1 },
      withIdempotencyKey('order-confirm-42'),
    );
    const reused = await trpc.orders.create
      .mutate({ sku: 'coffee', quantity: 1 }, withIdempotencyKey('order-confirm-42'))
      .catch((e: unknown) => e);
    expect((reused as TRPCClientError<OrdersRouter>).data?.httpStatus).toBe(422);
    expect(idemErrorOf(reused)?.reason).toBe('IDEMPOTENCY_KEY_REUSED');

    // A client that does not know orders.create is idempotent sends no key.
    const unaware = client({ idempotent: {} as never });
    const missing = await unaware.trpc.orders.create
      .mutate({ sku: 'tea', quantity: 1 })
      .catch((e: unknown) => e);
    expect(idemErrorOf(missing)?.reason).toBe('IDEMPOTENCY_KEY_MISSING');

    await expect(trpc.orders.create.mutate({ sku: 'tea', quantity: 0 })).rejects.toBeInstanceOf(
      TRPCClientError,
    );

    const anonymous = createTRPCClient<OrdersRouter>({
      links: [
        idemLink<OrdersRouter>({
          http: { url: `${proxy.origin}/trpc` },
          idempotent: { 'orders.create': true },
        }),
        httpBatchLink({ url: `${proxy.origin}/trpc` }),
      ],
    });
    const unauthorized = await anonymous.orders.create
      .mutate({ sku: 'tea', quantity: 1 })
      .catch((e: unknown) => e);
    expect((unauthorized as TRPCClientError<OrdersRouter>).data?.httpStatus).toBe(401);

    expect(proxy.requests).toHaveLength(5); // one request per call: nothing was retried
    expect(retries).toEqual([]);
    expect(unaware.retries).toEqual([]);
    expect(await rows()).toBe(1);
  });

  it('(7) never resends a mutation without a key after its response was dropped', async () => {
    const { trpc, retries, giveUps, rows } = client();
    proxy.plan = () => ({ type: 'drop-response' });
    await expect(trpc.orders.cancel.mutate({ sku: 'tea' })).rejects.toBeInstanceOf(TRPCClientError);
    expect(proxy.requests).toHaveLength(1);
    expect(retries).toEqual([]);
    expect(giveUps.map((e) => [e.because, e.failure])).toEqual([['unsafe', 'connection-lost']]);
    expect(app.executions['orders.cancel']).toBe(1);
    expect(await rows('orders.cancel')).toBe(1);
  });

  it('(8) keeps per-mutation keys with httpBatchLink in the chain', async () => {
    const { trpc, rows } = client();
    const [a, b] = await Promise.all([
      trpc.orders.create.mutate({ sku: 'a', quantity: 1 }),
      trpc.orders.create.mutate({ sku: 'b', quantity: 1 }),
      trpc.orders.list.query(),
      trpc.orders.list.query(),
    ]);
    const mutations = proxy.requests.filter((r) => r.method === 'POST');
    expect(mutations).toHaveLength(2);
    expect(mutations.every((r) => !r.url.includes('batch=1'))).toBe(true);
    expect(new Set(mutations.map(keyOf)).size).toBe(2);
    expect(a?.id).not.toBe(b?.id);
    expect(proxy.requests.filter((r) => r.method === 'GET')).toHaveLength(1); // the queries, batched
    expect(app.executions['orders.create']).toBe(2);
    expect(await rows()).toBe(2);
  });

  it('commits concurrent calls that share one caller key once, and gives every caller the result', async () => {
    const { trpc, rows } = client({ deadlineMs: 15_000 });
    const results = await Promise.all(
      Array.from({ length: 5 }, () =>
        trpc.orders.create.mutate({ sku: 'tea', quantity: 1 }, withIdempotencyKey('checkout-7')),
      ),
    );
    expect(new Set(results.map((r) => r.id)).size).toBe(1);
    // The key is taken at commit: a call that read it before the first commit ran the handler
    // too, and its transaction rolled back. One row stays.
    expect(app.executions['orders.create']).toBeGreaterThanOrEqual(1);
    expect(await rows()).toBe(1);
  });

  it('sends the remaining deadline, and the server sees fewer milliseconds on each attempt', async () => {
    const { trpc } = client({ deadlineMs: 8_000, backoff: () => 200 });
    proxy.plan = ({ n }) => (n === 1 ? htmlPage(503, 'Service Unavailable') : { type: 'pass' });
    await trpc.orders.create.mutate({ sku: 'tea', quantity: 1 });
    const sent = proxy.requests.map((r) => Number(r.headers['idempotency-timeout-ms']));
    expect(sent[0]).toBeLessThanOrEqual(8_000);
    expect(sent[1]).toBeLessThanOrEqual(sent[0]! - 200);
  });
});
