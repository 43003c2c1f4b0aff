/**
 * Rolling idem out: with `keys: 'optional'`, a call without a key (a client without idem's link)
 * runs as it did before idem, unprotected, counted and marked `Idempotency-Protected: false`; a
 * call with a key is idempotent as under `keys: 'required'`, the default, which is unchanged.
 * Over HTTP, on PGlite and on PostgreSQL.
 */
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { initTRPC, TRPCError } from '@trpc/server';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { createHTTPServer } from '@trpc/server/adapters/standalone';
import type { IdemMeta, RecoveryStore } from '@idem/contract';
import { httpPost, postgresAvailable, testMeter, type HttpResult } from '@idem/fixtures';
import { sql } from 'drizzle-orm';
import type { PgDatabase } from 'drizzle-orm/pg-core';
import { describe, expect, it, onTestFinished } from 'vitest';
import { z } from 'zod';
import {
  createIdempotency,
  idemContext,
  idemErrorFormatter,
  idemResponseMeta,
  SERVER_METRICS,
  type IdemServerEvent,
} from '../src/index.js';
import type { KeyRequirement } from '../src/types/options.js';
import { pgliteEnv, postgresEnv, type TestEnv } from './fixtures/databases.js';
import { post, serve, testContext } from './fixtures/httpHarness.js';
import { testOrders, TEST_KEY_SECRET, type TestContext } from './fixtures/testApp.js';

const account = () => `acct_${randomUUID().replaceAll('-', '')}`;
const ordersOf = (acct: string) => sql`select 1 from test_orders where scope = ${acct}`;
const recordsOf = (acct: string) => sql`select 1 from idem_records where scope = ${acct}`;
const order = { sku: 'r-1', quantity: 1 };

/**
 * An app whose idempotent procedures take the app's `keys`, except `orders.strict` (always
 * required) and `orders.loose` (always optional). Each handler counts its runs and says what
 * `ctx.idem` it saw.
 */
function createRolloutApp<TTx extends PgDatabase<any, any, any>>(
  store: RecoveryStore<TTx>,
  keys: KeyRequirement | undefined,
) {
  const calls: Record<string, number> = {};
  const events: IdemServerEvent[] = [];
  const metrics = testMeter();
  const sent: string[] = [];
  const count = (name: string) => (calls[name] = (calls[name] ?? 0) + 1);
  const t = initTRPC
    .context<TestContext>()
    .meta<IdemMeta>()
    .create({ errorFormatter: idemErrorFormatter() });
  const authed = t.procedure.use(({ ctx, next }) => {
    if (!ctx.account) throw new TRPCError({ code: 'UNAUTHORIZED' });
    return next({ ctx: { account: ctx.account } });
  });
  const idem = createIdempotency({
    keySecret: TEST_KEY_SECRET,
    store,
    scope: (ctx: TestContext) => ctx.account ?? '',
    onEvent: (event) => events.push(event),
    meter: metrics.meter,
    ...(keys ? { keys } : {}),
  });
  const input = z.object({ sku: z.string(), quantity: z.number().int() });
  const insertOrder = (name: string) =>
    authed
      .input(input)
      .concat(
        idem.procedure(
          name === 'orders.strict'
            ? { keys: 'required' }
            : name === 'orders.loose'
              ? { keys: 'optional' }
              : {},
        ),
      )
      .mutation(async ({ ctx, input }) => {
        count(name);
        const [row] = await ctx.idem.tx
          .insert(testOrders)
          .values({ scope: ctx.account, sku: input.sku, quantity: input.quantity })
          .returning();
        return {
          id: row!.id,
          protected: ctx.idem.protected,
          keyHash: ctx.idem.keyHash,
          operationId: ctx.idem.operationId,
          executions: ctx.idem.executions,
        };
      });
  const router = t.router({
    orders: t.router({
      create: insertOrder('orders.create'),
      strict: insertOrder('orders.strict'),
      loose: insertOrder('orders.loose'),
      /** Not idempotent: shows whether anything in a refused batch ran. */
      note: authed.input(input).mutation(() => {
        count('orders.note');
        return { noted: true };
      }),
      /** Writes, then fails deterministically: with a key the failure is stored and replayed. */
      reject: authed
        .input(input)
        .concat(idem.procedure())
        .mutation(async ({ ctx, input }) => {
          count('orders.reject');
          await ctx.idem.tx
            .insert(testOrders)
            .values({ scope: ctx.account, sku: input.sku, quantity: input.quantity });
          throw new TRPCError({ code: 'NOT_FOUND', message: `no product ${input.sku}` });
        }),
    }),
    mail: t.router({
      /** External mode: a phase that writes, then an external call. */
      send: authed
        .input(input)
        .concat(idem.procedure({ mode: 'external' }))
        .mutation(async ({ ctx, input }) => {
          count('mail.send');
          const id = await ctx.idem.phase('record', async (tx) => {
            const [row] = await tx
              .insert(testOrders)
              .values({ scope: ctx.account, sku: input.sku, quantity: input.quantity })
              .returning();
            return row!.id;
          });
          const receipt = await ctx.idem.external('send', {
            call: async (operationId, { signal }) => {
              expect(signal.aborted).toBe(false);
              sent.push(operationId);
              return `sent-${id}`;
            },
          });
          await ctx.idem.heartbeat();
          return {
            receipt,
            protected: ctx.idem.protected,
            recoveryPoint: ctx.idem.recoveryPoint,
            operationId: ctx.idem.operationId,
          };
        }),
    }),
  });
  return { router, calls, events, metrics, sent };
}

/** POSTs a batch (`?batch=1`) of mutations, all with `input`, with or without a key. */
function postBatch(
  url: string,
  paths: string[],
  options: { account: string; key?: string },
): Promise<HttpResult> {
  const body = Object.fromEntries(paths.map((_, i) => [i, order]));
  return httpPost(`${url}/${paths.join(',')}?batch=1`, JSON.stringify(body), {
    authorization: `Bearer ${options.account}`,
    ...(options.key !== undefined ? { 'idempotency-key': options.key } : {}),
  });
}

const reasonOf = (res: HttpResult) => (res.json as any)?.error?.data?.idem?.reason;
const unprotectedCalls = (
  app: ReturnType<typeof createRolloutApp>,
  procedure: string,
): Promise<number> =>
  app.metrics.sum(SERVER_METRICS.unprotectedCalls, { 'idem.procedure': procedure });

function describeRollout(name: string, makeEnv: () => Promise<TestEnv>): void {
  describe(`rolling out on ${name}`, () => {
    it("keys: 'required' (the default) refuses a call without a key, and any batch holding the procedure, as before", async () => {
      await using env = await makeEnv();
      const app = createRolloutApp(env.store, undefined);
      await using server = await serve(app.router);
      const acct = account();

      const unkeyed = await post(server.url, 'orders.create', order, { account: acct });
      expect(unkeyed.status).toBe(400);
      expect(reasonOf(unkeyed)).toBe('IDEMPOTENCY_KEY_MISSING');
      expect(unkeyed.headers['idempotency-protected']).toBeUndefined();

      const batch = await postBatch(server.url, ['orders.create', 'orders.create'], {
        account: acct,
      });
      expect(batch.status).toBe(400);
      for (const item of batch.json as any[])
        expect(item.error.data.idem.reason).toBe('IDEMPOTENCY_BATCH_REFUSED');

      expect(app.calls).toEqual({});
      expect(await env.count(ordersOf(acct))).toBe(0);
      expect(await unprotectedCalls(app, 'orders.create')).toBe(0);
      expect(app.events.some((e) => e.type === 'unprotected')).toBe(false);
    });

    it("keys: 'optional': a call without a key runs every time, stores nothing, is marked and counted by procedure", async () => {
      await using env = await makeEnv();
      const app = createRolloutApp(env.store, 'optional');
      await using server = await serve(app.router);
      const acct = account();

      const first = await post(server.url, 'orders.create', order, { account: acct });
      const again = await post(server.url, 'orders.create', order, { account: acct });
      for (const res of [first, again]) {
        expect(res.status).toBe(200);
        expect(res.headers['idempotency-protected']).toBe('false');
        expect(res.headers['idempotent-replayed']).toBeUndefined();
        expect((res.json as any).result.data).toMatchObject({
          protected: false,
          keyHash: '',
          executions: 1,
        });
      }
      const ids = [first, again].map((res) => (res.json as any).result.data.operationId);
      expect(new Set(ids).size).toBe(2);
      // Ran twice, as without idem: two orders, and nothing in idem's table.
      expect(app.calls['orders.create']).toBe(2);
      expect(await env.count(ordersOf(acct))).toBe(2);
      expect(await env.count(recordsOf(acct))).toBe(0);
      expect(await unprotectedCalls(app, 'orders.create')).toBe(2);
      expect(await unprotectedCalls(app, 'orders.loose')).toBe(0);
      expect(await app.metrics.sum(SERVER_METRICS.executions)).toBe(0);
      const unprotected = app.events.filter((e) => e.type === 'unprotected');
      expect(unprotected).toEqual(
        ids.map((operationId) => ({
          type: 'unprotected',
          procedure: 'orders.create',
          scope: acct,
          keyHash: '',
          operationId,
          requestId: null,
        })),
      );
      expect(app.events).toHaveLength(2);
    });

    it("keys: 'optional': a call with a key is claimed and replayed as under 'required', unmarked and uncounted", async () => {
      await using env = await makeEnv();
      const app = createRolloutApp(env.store, 'optional');
      await using server = await serve(app.router);
      const acct = account();

      const first = await post(server.url, 'orders.create', order, { account: acct, key: 'k-1' });
      const retry = await post(server.url, 'orders.create', order, { account: acct, key: 'k-1' });
      expect(first.status).toBe(200);
      expect(retry.status).toBe(200);
      expect(retry.headers['idempotent-replayed']).toBe('true');
      expect(retry.text).toBe(first.text);
      for (const res of [first, retry])
        expect(res.headers['idempotency-protected']).toBeUndefined();
      expect((first.json as any).result.data.protected).toBe(true);
      expect((first.json as any).result.data.keyHash).toMatch(/^[0-9a-f]{64}$/);
      expect(app.calls['orders.create']).toBe(1);
      expect(await env.count(ordersOf(acct))).toBe(1);
      expect(await env.count(recordsOf(acct))).toBe(1);
      expect(await unprotectedCalls(app, 'orders.create')).toBe(0);
      expect(app.events.map((e) => e.type)).toEqual(['executed', 'replayed']);

      // The same key with another input is still a reused key.
      const reused = await post(
        server.url,
        'orders.create',
        { ...order, quantity: 9 },
        { account: acct, key: 'k-1' },
      );
      expect(reused.status).toBe(422);
      expect(reasonOf(reused)).toBe('IDEMPOTENCY_KEY_REUSED');
    });

    it("keys: 'optional': a batch without a key runs its idempotent mutations; with a key it is refused whole", async () => {
      await using env = await makeEnv();
      const app = createRolloutApp(env.store, 'optional');
      await using server = await serve(app.router);
      const acct = account();

      const unkeyed = await postBatch(server.url, ['orders.create', 'orders.create'], {
        account: acct,
      });
      expect(unkeyed.status).toBe(200);
      expect(unkeyed.headers['idempotency-protected']).toBe('false');
      for (const item of unkeyed.json as any[]) expect(item.result.data.protected).toBe(false);
      expect(app.calls['orders.create']).toBe(2);
      expect(await env.count(ordersOf(acct))).toBe(2);
      expect(await unprotectedCalls(app, 'orders.create')).toBe(2);

      // Refused whole: not even the plain mutation beside them runs.
      const keyed = await postBatch(server.url, ['orders.note', 'orders.create', 'orders.create'], {
        account: acct,
        key: 'k-batch',
      });
      expect(keyed.status).toBe(400);
      expect(keyed.json).toHaveLength(3);
      for (const item of keyed.json as any[])
        expect(item.error.data.idem.reason).toBe('IDEMPOTENCY_BATCH_REFUSED');
      // A required procedure in an unkeyed batch refuses the whole batch.
      const mixed = await postBatch(server.url, ['orders.create', 'orders.strict'], {
        account: acct,
      });
      expect(mixed.status).toBe(400);
      for (const item of mixed.json as any[])
        expect(item.error.data.idem.reason).toBe('IDEMPOTENCY_BATCH_REFUSED');
      expect(app.calls['orders.create']).toBe(2);
      expect(app.calls['orders.strict']).toBeUndefined();
      expect(app.calls['orders.note']).toBeUndefined();
      expect(await env.count(ordersOf(acct))).toBe(2);
      expect(await env.count(recordsOf(acct))).toBe(0);
    });

    it("keys: 'optional': without tRPC's info, a batch is judged per item: unkeyed runs, keyed is refused", async () => {
      await using env = await makeEnv();
      const app = createRolloutApp(env.store, 'optional');
      const bare = createHTTPServer({
        router: app.router,
        createContext: ({ req }) => testContext(req),
        responseMeta: idemResponseMeta,
      });
      await new Promise<void>((resolve) => bare.listen(0, '127.0.0.1', resolve));
      onTestFinished(
        () =>
          new Promise<void>((resolve) => {
            bare.close(() => resolve());
            bare.closeAllConnections();
          }),
      );
      const url = `http://127.0.0.1:${(bare.address() as AddressInfo).port}`;
      const acct = account();
      const unkeyed = await postBatch(url, ['orders.create'], { account: acct });
      expect(unkeyed.status).toBe(200);
      expect(unkeyed.headers['idempotency-protected']).toBe('false');
      const keyed = await postBatch(url, ['orders.create'], { account: acct, key: 'k-bare' });
      expect(keyed.status).toBe(400);
      expect((keyed.json as any)[0].error.data.idem.reason).toBe('IDEMPOTENCY_BATCH_REFUSED');
      expect(app.calls['orders.create']).toBe(1);
      expect(await env.count(recordsOf(acct))).toBe(0);
    });

    it.each([
      ['an empty key', ''],
      ['a key with a space', 'not a key'],
      ['a key of 256 characters', 'k'.repeat(256)],
      ['two keys', ['k-a', 'k-b']],
    ])("keys: 'optional' still refuses %s: absent is allowed, invalid is not", async (_, key) => {
      await using env = await makeEnv();
      const app = createRolloutApp(env.store, 'optional');
      await using server = await serve(app.router);
      const acct = account();
      const res = await post(server.url, 'orders.create', order, { account: acct, key });
      expect(res.status).toBe(400);
      expect(reasonOf(res)).toBe('IDEMPOTENCY_KEY_INVALID');
      expect(res.headers['idempotency-protected']).toBeUndefined();
      const batch = await postBatch(server.url, ['orders.create'], {
        account: acct,
        key: typeof key === 'string' ? key : key[0]!,
      });
      expect(batch.status).toBe(400);
      expect(app.calls).toEqual({});
      expect(await env.count(ordersOf(acct))).toBe(0);
      expect(await unprotectedCalls(app, 'orders.create')).toBe(0);
    });

    it("keys: 'optional': a failed call without a key rolls its writes back and stores nothing; the next call runs again", async () => {
      await using env = await makeEnv();
      const app = createRolloutApp(env.store, 'optional');
      await using server = await serve(app.router);
      const acct = account();
      for (let i = 0; i < 2; i++) {
        const res = await post(server.url, 'orders.reject', order, { account: acct });
        expect(res.status).toBe(404);
        expect(res.headers['idempotency-protected']).toBe('false');
        expect((res.json as any).error.message).toBe('no product r-1');
      }
      expect(app.calls['orders.reject']).toBe(2);
      expect(await env.count(ordersOf(acct))).toBe(0);
      expect(await env.count(recordsOf(acct))).toBe(0);
      expect(await unprotectedCalls(app, 'orders.reject')).toBe(2);
    });

    it("keys: 'optional', external mode: without a key the phase and the call run directly, every time, recording nothing", async () => {
      await using env = await makeEnv();
      const app = createRolloutApp(env.store, 'optional');
      await using server = await serve(app.router);
      const acct = account();
      for (let i = 0; i < 2; i++) {
        const res = await post(server.url, 'mail.send', order, { account: acct });
        expect(res.status).toBe(200);
        expect(res.headers['idempotency-protected']).toBe('false');
        expect((res.json as any).result.data).toMatchObject({
          protected: false,
          recoveryPoint: null,
        });
        expect((res.json as any).result.data.receipt).toMatch(/^sent-\d+$/);
      }
      expect(app.calls['mail.send']).toBe(2);
      expect(app.sent).toHaveLength(2);
      expect(new Set(app.sent).size).toBe(2);
      expect(await env.count(ordersOf(acct))).toBe(2);
      expect(await env.count(recordsOf(acct))).toBe(0);
      expect(await unprotectedCalls(app, 'mail.send')).toBe(2);

      // With a key: claimed, its steps recorded, replayed.
      const keyed = await post(server.url, 'mail.send', order, { account: acct, key: 'm-1' });
      const retry = await post(server.url, 'mail.send', order, { account: acct, key: 'm-1' });
      expect(keyed.status).toBe(200);
      expect(keyed.headers['idempotency-protected']).toBeUndefined();
      expect(retry.headers['idempotent-replayed']).toBe('true');
      expect(app.calls['mail.send']).toBe(3);
      expect(app.sent).toHaveLength(3);
      expect(await env.count(recordsOf(acct))).toBe(1);
    });

    it('a procedure overrides the app default both ways', async () => {
      await using env = await makeEnv();
      const acct = account();
      // App required, procedure optional.
      const required = createRolloutApp(env.store, 'required');
      await using requiredServer = await serve(required.router);
      const loose = await post(requiredServer.url, 'orders.loose', order, { account: acct });
      expect(loose.status).toBe(200);
      expect(loose.headers['idempotency-protected']).toBe('false');
      const looseBatch = await postBatch(requiredServer.url, ['orders.loose'], { account: acct });
      expect(looseBatch.status).toBe(200);
      const create = await post(requiredServer.url, 'orders.create', order, { account: acct });
      expect(reasonOf(create)).toBe('IDEMPOTENCY_KEY_MISSING');
      expect(required.calls).toEqual({ 'orders.loose': 2 });
      expect(await unprotectedCalls(required, 'orders.loose')).toBe(2);

      // App optional, procedure required.
      const optional = createRolloutApp(env.store, 'optional');
      await using optionalServer = await serve(optional.router);
      const strict = await post(optionalServer.url, 'orders.strict', order, { account: acct });
      expect(strict.status).toBe(400);
      expect(reasonOf(strict)).toBe('IDEMPOTENCY_KEY_MISSING');
      expect(strict.headers['idempotency-protected']).toBeUndefined();
      const strictBatch = await postBatch(optionalServer.url, ['orders.strict'], {
        account: acct,
      });
      expect(strictBatch.status).toBe(400);
      expect((strictBatch.json as any)[0].error.data.idem.reason).toBe('IDEMPOTENCY_BATCH_REFUSED');
      const keyed = await post(optionalServer.url, 'orders.strict', order, {
        account: acct,
        key: 's-1',
      });
      expect(keyed.status).toBe(200);
      expect(optional.calls).toEqual({ 'orders.strict': 1 });
      expect(await unprotectedCalls(optional, 'orders.strict')).toBe(0);
    });

    it("keys: 'optional' on the fetch adapter: the response of a call without a key carries the header", async () => {
      await using env = await makeEnv();
      const app = createRolloutApp(env.store, 'optional');
      const acct = account();
      const res = await fetchRequestHandler({
        endpoint: '/trpc',
        router: app.router,
        req: new Request('http://localhost/trpc/orders.create', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(order),
        }),
        // The adapter's options as they come: idem writes its headers to `resHeaders` itself.
        createContext: (opts) => ({ ...idemContext(opts), account: acct }),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('Idempotency-Protected')).toBe('false');
      expect(app.calls['orders.create']).toBe(1);
      expect(await env.count(recordsOf(acct))).toBe(0);
    });
  });
}

describeRollout('PGlite', () => pgliteEnv());
describe.skipIf(!(await postgresAvailable()))('PostgreSQL', () => {
  describeRollout('PostgreSQL', () => postgresEnv());
});

describe('keys misuse at start-up', () => {
  const store = {} as RecoveryStore<unknown>;
  const base = { keySecret: TEST_KEY_SECRET, store, scope: () => 'acct_x' };

  it.each(['Required', 'none', true, null])(
    'refuses keys: %j on the app, naming the values',
    (keys) => {
      expect(() => createIdempotency({ ...base, keys: keys as never })).toThrow(
        /^createIdempotency: keys must be 'required' or 'optional', got /,
      );
    },
  );

  it('refuses an unknown keys on a procedure, naming the values', () => {
    const idem = createIdempotency(base);
    expect(() => idem.procedure({ keys: 'off' as never })).toThrow(
      `idem.procedure(): keys must be 'required' or 'optional', got "off"`,
    );
  });

  it("refuses respond: 'accepted' with keys: 'optional', on the procedure or from the app's default", () => {
    const statusLocation = '/trpc/jobs.status';
    const accepted = { mode: 'external', respond: 'accepted' } as const;
    expect(() =>
      createIdempotency({ ...base, statusLocation }).procedure({
        ...accepted,
        keys: 'optional' as never,
      }),
    ).toThrow("remove keys: 'optional' from this procedure");
    const optional = createIdempotency({ ...base, statusLocation, keys: 'optional' });
    expect(() => optional.procedure(accepted)).toThrow(
      "the app's keys is 'optional', so set keys: 'required' on this procedure",
    );
    expect(() => optional.procedure({ ...accepted, keys: 'required' })).not.toThrow();
  });
});
