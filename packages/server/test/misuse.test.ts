/**
 * Misuse never turns into a wrong answer: each mistake a new user can make with idem either does
 * not compile (src/createIdempotency.test-d.ts), is reported by the router audit, or fails every
 * call before the handler runs, naming the fix. And idem's response headers no longer depend on
 * remembering `responseMeta`.
 */
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { initTRPC } from '@trpc/server';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { createHTTPServer } from '@trpc/server/adapters/standalone';
import type { IdemMeta, RecoveryStore } from '@idem/contract';
import { sql } from 'drizzle-orm';
import { describe, expect, it, onTestFinished } from 'vitest';
import { z } from 'zod';
import {
  createIdempotency,
  idemContext,
  idemResponseMeta,
  type IdemContext,
} from '../src/index.js';
import { pgliteEnv } from './fixtures/databases.js';
import { post } from './fixtures/httpHarness.js';
import { createPaymentsApp } from './fixtures/paymentsApp.js';
import { createTestApp, Gate, TEST_KEY_SECRET } from './fixtures/testApp.js';

const account = () => `acct_${randomUUID().replaceAll('-', '')}`;

/** idem on `store`, for one caller (`acct_x`), with nothing else set. */
const idemOn = (store: Parameters<typeof createIdempotency>[0]['store']) =>
  createIdempotency({ keySecret: TEST_KEY_SECRET, store, scope: () => 'acct_x' });

/** Serves a router over the standalone adapter, with or without `responseMeta`. */
async function serveWith(
  router: Parameters<typeof createHTTPServer>[0]['router'],
  options: { responseMeta: boolean },
): Promise<string> {
  const server = createHTTPServer({
    router,
    // The adapter's options as they come: idem writes its headers to `res` itself.
    createContext: (opts) => {
      const auth = opts.req.headers.authorization;
      const match = typeof auth === 'string' ? /^Bearer (acct_\w+)$/.exec(auth) : null;
      return { ...idemContext(opts), account: match?.[1] ?? null };
    },
    ...(options.responseMeta ? { responseMeta: idemResponseMeta } : {}),
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('idem headers without responseMeta', () => {
  it.each([false, true])(
    'standalone adapter (responseMeta: %s): replay has Idempotent-Replayed, 409 has Retry-After',
    async (responseMeta) => {
      await using env = await pgliteEnv();
      const gate = new Gate();
      onTestFinished(() => gate.open());
      const app = createTestApp(env.store, { gate });
      const url = await serveWith(app.router, { responseMeta });
      const acct = account();

      const first = await post(
        url,
        'orders.create',
        { sku: 's', quantity: 1 },
        { key: 'k1', account: acct },
      );
      const replay = await post(
        url,
        'orders.create',
        { sku: 's', quantity: 1 },
        { key: 'k1', account: acct },
      );
      expect(first.status).toBe(200);
      expect(first.headers['idempotent-replayed']).toBeUndefined();
      expect(replay.status).toBe(200);
      expect(replay.headers['idempotent-replayed']).toBe('true');

      // External mode commits the claim first; a duplicate while the handler waits gets 409.
      const send = () => post(url, 'mail.send', { to: 'a@b' }, { key: 'k2', account: acct });
      const both = [send(), send()];
      const busy = await Promise.race(both); // one holds the claim until the gate opens
      expect(busy.status).toBe(409);
      expect(busy.headers['retry-after']).toBe('1');
      gate.open();
      expect((await Promise.all(both)).map((r) => r.status).sort()).toEqual([200, 409]);
    },
  );

  it('standalone adapter without responseMeta: accepted work still answers 202', async () => {
    await using env = await pgliteEnv();
    const app = createPaymentsApp(env.db, env.store);
    const url = await serveWith(app.router, { responseMeta: false });
    const acct = account();
    const first = await post(url, 'payLater', { amount: 900 }, { key: 'later', account: acct });
    expect(first.status).toBe(202);
    const { operationId } = first.json.result.data;
    const ctx = { account: acct } as never;
    // Let the background work finish before the database closes.
    await expect
      .poll(async () => (await app.idem.operationStatus(ctx, operationId))?.state)
      .toBe('COMPLETED');
    const again = await post(url, 'payLater', { amount: 900 }, { key: 'later', account: acct });
    expect(again.status).toBe(202);
    expect(again.json.result.data.operationId).toBe(operationId);
  });

  it('fetch adapter: the header once, with or without responseMeta', async () => {
    await using env = await pgliteEnv();
    const app = createTestApp(env.store);
    const handle = (key: string, responseMeta: boolean) =>
      fetchRequestHandler({
        endpoint: '/trpc',
        router: app.router,
        req: new Request('http://localhost/trpc/orders.create', {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'Idempotency-Key': key },
          body: JSON.stringify({ sku: 'f', quantity: 1 }),
        }),
        createContext: (opts) => ({ ...idemContext(opts), account: 'acct_fetch' }),
        ...(responseMeta ? { responseMeta: idemResponseMeta } : {}),
      });
    for (const responseMeta of [false, true]) {
      const key = `fetch-${responseMeta}`;
      expect((await handle(key, responseMeta)).status).toBe(200);
      const replay = await handle(key, responseMeta);
      expect(replay.status).toBe(200);
      expect(replay.headers.get('Idempotent-Replayed')).toBe('true');
    }
  });
});

describe('an output idem cannot store', () => {
  type Ctx = IdemContext & { account: string | null };
  const t = initTRPC.context<Ctx>().meta<IdemMeta>().create();

  it.each(['at-commit', 'first'] as const)(
    'claim %s: a 500 naming the fix, not a retryable 503; the key is released, nothing stored',
    async (claim) => {
      await using env = await pgliteEnv();
      const idem = idemOn(env.store);
      let calls = 0;
      const router = t.router({
        // JSON cannot write a BigInt: the output could never be replayed.
        big: t.procedure
          .input(z.object({ a: z.string() }))
          .concat(idem.procedure({ claim }))
          .mutation(() => ({ n: BigInt(++calls) })),
      });
      const url = await serveWith(router, { responseMeta: true });
      const first = await post(url, 'big', { a: 'x' }, { key: 'k-big' });
      const again = await post(url, 'big', { a: 'x' }, { key: 'k-big' });
      for (const answer of [first, again]) {
        expect(answer.status).toBe(500);
        expect(answer.json.error.message).toMatch(
          /idem: the output of big cannot be stored for replay \(.*BigInt.*\): return data the serializer can write/,
        );
      }
      expect(calls).toBe(2);
      expect(await env.count(sql`select 1 from idem_records`)).toBe(0);
    },
  );

  it('external mode: a 500 naming the fix, not a retryable 503 that says nothing ran', async () => {
    await using env = await pgliteEnv();
    const idem = idemOn(env.store);
    const router = t.router({
      big: t.procedure
        .input(z.object({ a: z.string() }))
        .concat(idem.procedure({ mode: 'external' }))
        .mutation(() => ({ n: 1n })),
    });
    const url = await serveWith(router, { responseMeta: true });
    const answer = await post(url, 'big', { a: 'x' }, { key: 'k-big' });
    expect(answer.status).toBe(500);
    expect(answer.json.error.message).toMatch(
      /idem: the output of big cannot be stored for replay/,
    );
    // The work ran: its record stays under its lease for a takeover, never released blind.
    expect(await env.count(sql`select 1 from idem_records where state = 'IN_PROGRESS'`)).toBe(1);
  });
});

describe('misplaced idem never answers wrongly', () => {
  type Ctx = IdemContext & { account: string | null };
  const t = initTRPC.context<Ctx>().meta<IdemMeta>().create();

  it('an .input() merged in after idem: every call fails before the handler, naming the fix', async () => {
    await using env = await pgliteEnv();
    const idem = idemOn(env.store);
    let calls = 0;
    const router = t.router({
      merged: t.procedure
        .input(z.object({ a: z.string() }))
        .concat(idem.procedure())
        .input(z.object({ b: z.string() })) // compiles (tRPC merges object inputs); refused at run time
        .mutation(({ input }) => ++calls + input.b.length),
    });
    const url = await serveWith(router, { responseMeta: true });
    const first = await post(url, 'merged', { a: 'x', b: 'one' }, { key: 'k' });
    const other = await post(url, 'merged', { a: 'x', b: 'two' }, { key: 'k' });
    for (const answer of [first, other]) {
      expect(answer.status).toBe(500);
      expect(answer.json.error.message).toMatch(
        /merged reads its input after idem\.procedure\(\): put every \.input\(\) before \.concat\(idem\.procedure\(\)\)/,
      );
    }
    expect(calls).toBe(0);
  });

  it('the completer refuses, at start-up, a router where idem is misplaced', async () => {
    await using env = await pgliteEnv();
    const idem = idemOn(env.store);
    const misplaced = t.router({
      read: t.procedure.concat(idem.procedure()).query(() => 1),
      ok: t.procedure
        .input(z.object({ a: z.string() }))
        .concat(idem.procedure({ mode: 'external' }))
        .mutation(() => 1),
    });
    const createContext = () => ({ ...idemContext(new Headers()), account: 'acct_x' });
    expect(() => idem.completer({ router: misplaced, createContext })).toThrow(
      /read: idem\.procedure\(\) on a query: only mutations take idempotency keys; make it a mutation or drop idem\.procedure\(\)/,
    );
    const fixed = t.router({ ok: misplaced.ok });
    expect(() => idem.completer({ router: fixed, createContext })).not.toThrow();
    // An .output() in front of idem: the first call works, its replays are parsed again.
    const outputFirst = t.router({
      stamp: t.procedure
        .input(z.object({ a: z.string() }))
        .output(z.object({ at: z.date() }))
        .concat(idem.procedure({ mode: 'external' }))
        .mutation(() => ({ at: new Date(0) })),
    });
    expect(() => idem.completer({ router: outputFirst, createContext })).toThrow(
      /stamp: an \.output\(\) comes before \.concat\(idem\.procedure\(\)\).*put \.output\(\) after/,
    );
  });

  it('the workers refuse, at start-up, options that would make them idle, spin or take over records they cannot run', async () => {
    await using env = await pgliteEnv();
    const idem = createIdempotency({
      keySecret: TEST_KEY_SECRET,
      store: env.store,
      scope: () => 'acct_x',
      queue: {},
      statusLocation: '/status',
    });
    const router = t.router({
      pay: t.procedure
        .input(z.object({ a: z.string() }))
        .concat(idem.procedure({ mode: 'external' }))
        .mutation(() => 1),
      exportAll: t.procedure
        .input(z.object({ a: z.string() }))
        .concat(idem.procedure({ mode: 'external', respond: 'accepted' }))
        .mutation(() => 1),
      local: t.procedure
        .input(z.object({ a: z.string() }))
        .concat(idem.procedure())
        .mutation(() => 1),
    });
    const createContext = () => ({ account: 'acct_x' });
    const completer = (options: object) => () =>
      idem.completer({ router, createContext, ...options });
    const pool = (options: object) => () => idem.workerPool({ router, createContext, ...options });

    // A typo, or a procedure of another mode: its records would be taken over and fail every run.
    expect(completer({ procedures: ['pya'] })).toThrow(
      'idem.completer(): procedures lists pya, not external-mode idempotent procedures of the router (those are: pay, exportAll)',
    );
    expect(completer({ procedures: ['pay', 'local'] })).toThrow(/procedures lists local, not/);
    expect(pool({ procedures: ['pay'] })).toThrow(
      "idem.workerPool(): procedures lists pay, not respond: 'accepted' procedures of the router (those are: exportAll)",
    );
    // Numbers that would make a worker do nothing, or spin on the database.
    for (const [options, message] of [
      [{ batchSize: 0 }, 'idem.completer(): batchSize must be an integer from 1, got 0'],
      [{ leaseMs: Number.NaN }, 'idem.completer(): leaseMs must be an integer from 1, got NaN'],
      [
        { intervalMs: -1 },
        'idem.completer(): intervalMs must be a number from 0 to 2147483647, got -1',
      ],
      // Past 2^31 - 1 ms a timer fires after 1 ms: the completer would run in a loop.
      [
        { intervalMs: 2 ** 31 },
        'idem.completer(): intervalMs must be a number from 0 to 2147483647, got 2147483648',
      ],
    ] as const) {
      expect(completer(options)).toThrow(message);
    }
    expect(pool({ pollMs: 0 })).toThrow(
      'idem.workerPool(): pollMs must be a number from 1 to 2147483647, got 0',
    );
    expect(pool({ pollMs: 2 ** 31 })).toThrow(/pollMs must be a number from 1 to 2147483647/);
    expect(pool({ leaseMs: 2.5 })).toThrow(
      'idem.workerPool(): leaseMs must be an integer from 1, got 2.5',
    );
    expect(pool({ concurrency: 0 })).toThrow(
      'idem.workerPool(): concurrency must be an integer from 1, got 0',
    );

    // The same options, right, are taken (the pool starts at once, so it is stopped again).
    expect(
      completer({ procedures: ['pay'], batchSize: 1, leaseMs: 1, intervalMs: 0 }),
    ).not.toThrow();
    const started = idem.workerPool({
      router,
      createContext,
      procedures: ['exportAll'],
      pollMs: 1,
    });
    await started.stop();
  });

  it('idem on a query: every call fails, naming the fix (auditRouter reports it before)', async () => {
    await using env = await pgliteEnv();
    const idem = idemOn(env.store);
    const router = t.router({ read: t.procedure.concat(idem.procedure()).query(() => 1) });
    const url = await serveWith(router, { responseMeta: true });
    const answer = await fetch(`${url}/read`, { headers: { 'Idempotency-Key': 'k' } });
    expect(answer.status).toBe(500);
    expect((await answer.json()).error.message).toMatch(/only mutations take idempotency keys/);
  });
});

describe('options that cannot go together fail at start-up, naming the fix', () => {
  const idem = createIdempotency({
    keySecret: TEST_KEY_SECRET,
    // Start-up checks read options only; the store is never called.
    store: {} as RecoveryStore<unknown>,
    scope: () => 'acct_x',
  });

  it("claim: 'at-commit' in external mode: a type error, and a TypeError when the procedure is built", () => {
    // @ts-expect-error external mode claims first: 'at-commit' does not compile
    expect(() => idem.procedure({ mode: 'external', claim: 'at-commit' })).toThrow(TypeError);
    // @ts-expect-error (the same misuse, for the message)
    expect(() => idem.procedure({ mode: 'external', claim: 'at-commit' })).toThrow(
      /claim: 'at-commit' is for local mode; external mode always claims first.*Remove the claim option/,
    );
    // What it names as the fix, and the other combinations, are accepted.
    expect(() => idem.procedure({ mode: 'external' })).not.toThrow();
    expect(() => idem.procedure({ mode: 'external', claim: 'first' })).not.toThrow();
    expect(() => idem.procedure({ claim: 'at-commit' })).not.toThrow();
    expect(() => idem.procedure({ claim: 'first' })).not.toThrow();
  });

  it("an app default of claim: 'at-commit' is for its local procedures: external ones still build", () => {
    const withDefault = createIdempotency({
      keySecret: TEST_KEY_SECRET,
      store: {} as RecoveryStore<unknown>,
      scope: () => 'acct_x',
      defaults: { claim: 'at-commit' },
    });
    expect(() => withDefault.procedure({ mode: 'external' })).not.toThrow();
    expect(() => withDefault.procedure()).not.toThrow();
  });
});
