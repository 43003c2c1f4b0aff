/**
 * A 202 of accepted work says where to ask and when: `Location` (from `statusLocation`), which
 * answers the operation's status when fetched with the caller's credentials, and `Retry-After`.
 * Every 202 of the key carries them: the first, a duplicate while the work runs, a replay after it
 * ended, a queued one. An accepted procedure of an app that cannot say where is refused at
 * start-up, and so is an address no response can carry.
 */
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { httpPost, postgresAvailable } from '@idem/fixtures';
import { initTRPC, TRPCError, type AnyTRPCRouter } from '@trpc/server';
import { createHTTPServer } from '@trpc/server/adapters/standalone';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import type { IdemMeta, RecoveryStore } from '@idem/contract';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createIdempotency,
  idemContext,
  idemErrorFormatter,
  idemResponseMeta,
  operationStatusInput,
  type CreateIdempotencyOptions,
} from '../src/index.js';
import { pgliteEnv, postgresEnv, type TestEnv } from './fixtures/databases.js';
import { serve, testContext } from './fixtures/httpHarness.js';
import { createQueueApp, createQueueTables } from './fixtures/queueApp.js';
import { Gate, TEST_KEY_SECRET, type TestContext } from './fixtures/testApp.js';

const available = await postgresAvailable();
const account = () => `acct_${randomUUID().replaceAll('-', '')}`;

type IdemOptions = Partial<CreateIdempotencyOptions<TestContext, unknown>>;

/** `reports.export`, accepted work that waits at `gate`; `reports.status`, the status query. */
function createReportsApp(env: TestEnv, gate: Gate, options: IdemOptions = {}) {
  const t = initTRPC
    .context<TestContext>()
    .meta<IdemMeta>()
    .create({ errorFormatter: idemErrorFormatter({ onMasked: () => {} }) });
  const authed = t.procedure.use(({ ctx, next }) => {
    if (!ctx.account) throw new TRPCError({ code: 'UNAUTHORIZED' });
    return next({ ctx: { account: ctx.account } });
  });
  const idem = createIdempotency({
    store: env.store as unknown as RecoveryStore<unknown>,
    keySecret: TEST_KEY_SECRET,
    scope: (ctx: TestContext) => ctx.account ?? '',
    statusLocation: '/reports.status',
    ...options,
  });
  return t.router({
    reports: t.router({
      export: authed
        .input(z.object({ month: z.string() }))
        .concat(idem.procedure({ mode: 'external', respond: 'accepted' }))
        .mutation(async ({ input }) => {
          await gate.opened;
          return { url: `/reports/${input.month}.csv` };
        }),
      status: authed.input(operationStatusInput).query(idem.operationStatusQuery),
    }),
  });
}

/** One HTTP answer, as a raw-HTTP integrator reads it. */
interface Answer {
  status: number;
  location: string | null;
  retryAfter: string | null;
  json: any;
}

/** GETs `location` (resolved against the server) as `acct`: the integrator's poll. */
async function follow(url: string, location: string, acct: string): Promise<Answer> {
  const response = await fetch(new URL(location, url), {
    headers: { authorization: `Bearer ${acct}` },
  });
  return {
    status: response.status,
    location: response.headers.get('location'),
    retryAfter: response.headers.get('retry-after'),
    json: await response.json(),
  };
}

async function submit(url: string, input: unknown, key: string, acct: string): Promise<Answer> {
  const result = await httpPost(`${url}/reports.export`, JSON.stringify(input), {
    'Idempotency-Key': key,
    authorization: `Bearer ${acct}`,
  });
  const header = (name: string) => (result.headers[name] as string | undefined) ?? null;
  return {
    status: result.status,
    location: header('location'),
    retryAfter: header('retry-after'),
    json: result.json,
  };
}

/** The Location idem builds from the status query's path: a tRPC GET of `{ operationId }`. */
const statusAddress = (path: string, operationId: string) =>
  `${path}?input=${encodeURIComponent(JSON.stringify({ operationId }))}`;

/** Serves `router` on the standalone adapter with `idemContext(opts)` and no `responseMeta`. */
async function serveWithoutResponseMeta(router: AnyTRPCRouter) {
  const server = createHTTPServer({
    router,
    createContext: (opts) => ({ ...testContext(opts.req), ...idemContext(opts) }),
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    [Symbol.asyncDispose]: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

describe.skipIf(!available)('a 202 says where to poll (PostgreSQL)', () => {
  it.each([
    ['with idemResponseMeta', serve],
    ['without responseMeta (idemContext writes to the response)', serveWithoutResponseMeta],
  ])(
    'standalone %s: Location answers the status for the caller; every 202 of the key carries it',
    async (_, serveApp) => {
      await using env = await postgresEnv();
      const gate = new Gate();
      await using server = await serveApp(createReportsApp(env, gate));
      const acct = account();
      const first = await submit(server.url, { month: '2026-11' }, 'report-2026-11', acct);
      expect(first).toMatchObject({ status: 202, retryAfter: '1' });
      const { operationId, state } = first.json.result.data;
      expect(state).toBe('IN_PROGRESS');
      expect(first.location).toBe(statusAddress('/reports.status', operationId));

      // The caller polls the Location: the operation, still running.
      const running = await follow(server.url, first.location!, acct);
      expect(running.status).toBe(200);
      expect(running.json.result.data).toMatchObject({ operationId, state: 'IN_PROGRESS' });
      // Another caller learns nothing there: the 404 of a random id.
      const theirs = await follow(server.url, first.location!, account());
      expect(theirs.status).toBe(404);
      expect(theirs.json.error.message).toBe('no such operation');

      // A duplicate while the work runs: the same operation, the same Location and wait.
      const duplicate = await submit(server.url, { month: '2026-11' }, 'report-2026-11', acct);
      expect(duplicate).toMatchObject({
        status: 202,
        location: first.location,
        retryAfter: '1',
        json: { result: { data: { operationId, state: 'IN_PROGRESS' } } },
      });

      gate.open();
      await expect
        .poll(async () => (await follow(server.url, first.location!, acct)).json.result.data.state)
        .toBe('COMPLETED');
      const done = await follow(server.url, first.location!, acct);
      expect(done.json.result.data.result).toEqual({ url: '/reports/2026-11.csv' });

      // A replay after the end: still 202 with the operation, Location and Retry-After.
      const replay = await submit(server.url, { month: '2026-11' }, 'report-2026-11', acct);
      expect(replay).toMatchObject({
        status: 202,
        location: first.location,
        retryAfter: '1',
        json: { result: { data: { operationId, state: 'COMPLETED' } } },
      });
    },
  );

  it('a queued 202 (PENDING) carries them too, and its Location answers PENDING', async () => {
    await using env = await postgresEnv();
    for (const statement of createQueueTables) await env.db.execute(statement);
    const app = createQueueApp(env.db, env.store as unknown as RecoveryStore<unknown>, {
      maxDepth: 10,
      process: 'one',
    });
    await using server = await serve(app.router);
    const acct = account();
    const answer = await httpPost(`${server.url}/jobs.export`, '{"n":1}', {
      'Idempotency-Key': 'job-1',
      authorization: `Bearer ${acct}`,
    });
    expect(answer.status).toBe(202);
    const { operationId, state } = answer.json.result.data;
    expect(state).toBe('PENDING');
    expect(answer.headers.location).toBe(statusAddress('/jobs.status', operationId));
    expect(answer.headers['retry-after']).toBe('1');
    const queued = await follow(server.url, answer.headers.location!, acct);
    expect(queued.json.result.data).toMatchObject({ operationId, state: 'PENDING' });
  });

  it('Retry-After follows inProgressRetryAfterMs; a function gives the whole address', async () => {
    await using env = await postgresEnv();
    const gate = new Gate();
    const router = createReportsApp(env, gate, {
      inProgressRetryAfterMs: 2500,
      statusLocation: (operationId) => `https://api.example.com/v1/operations/${operationId}`,
    });
    await using server = await serve(router);
    const acct = account();
    const answer = await submit(server.url, { month: '2026-10' }, 'report-2026-10', acct);
    gate.open();
    const { operationId } = answer.json.result.data;
    expect(answer).toMatchObject({
      status: 202,
      location: `https://api.example.com/v1/operations/${operationId}`,
      retryAfter: '3',
    });
    // The work ends before the database goes: its own status query says so.
    await expect
      .poll(async () => {
        const status = await follow(
          server.url,
          statusAddress('/reports.status', operationId),
          acct,
        );
        return status.json.result.data.state;
      })
      .toBe('COMPLETED');
  });
});

describe('a 202 says where to poll (fetch adapter, PGlite)', () => {
  it('202, Location and Retry-After reach the Response; the Location answers the status', async () => {
    await using env = await pgliteEnv();
    const gate = new Gate();
    const router = createReportsApp(env, gate, { statusLocation: '/trpc/reports.status' });
    const acct = account();
    const handle = (req: Request) =>
      fetchRequestHandler({
        endpoint: '/trpc',
        router,
        req,
        createContext: (opts) => ({ ...idemContext(opts), account: acct }),
        responseMeta: idemResponseMeta,
      });
    const accepted = await handle(
      new Request('http://localhost/trpc/reports.export', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': 'report-fetch' },
        body: JSON.stringify({ month: '2026-09' }),
      }),
    );
    expect(accepted.status).toBe(202);
    const { operationId } = (await accepted.json()).result.data;
    const location = accepted.headers.get('location');
    expect(location).toBe(statusAddress('/trpc/reports.status', operationId));
    expect(accepted.headers.get('retry-after')).toBe('1');
    const status = await handle(new Request(new URL(location!, 'http://localhost')));
    expect(status.status).toBe(200);
    expect((await status.json()).result.data).toMatchObject({ operationId, state: 'IN_PROGRESS' });
    gate.open();
    await expect
      .poll(async () => {
        const polled = await handle(new Request(new URL(location!, 'http://localhost')));
        return (await polled.json()).result.data.state;
      })
      .toBe('COMPLETED');
  });
});

describe('a 202 that could not say where to poll is refused at start-up', () => {
  let env: TestEnv;
  beforeAll(async () => {
    env = await pgliteEnv();
  });
  afterAll(async () => {
    await env?.[Symbol.asyncDispose]();
  });

  it('an accepted procedure without statusLocation: a start-up error naming the fix', () => {
    expect(() => createReportsApp(env, new Gate(), { statusLocation: undefined })).toThrow(
      /respond: 'accepted' answers 202 with a Location to poll: pass createIdempotency statusLocation/,
    );
  });

  it.each([
    ['a path with a query', '/trpc/jobs.status?input=x', /without a query or fragment/],
    ['a path with a space', '/trpc/jobs status', /URL path of your status query/],
    ['an empty path', '', /URL path of your status query/],
    ['a function returning a space', () => '/ops/a b', /visible ASCII/],
    ['a function returning nothing', () => undefined as unknown as string, /returned undefined/],
    ['neither', 42 as unknown as string, /must be the URL path of your status query or a function/],
  ])('statusLocation as %s: refused by createIdempotency', (_, statusLocation, message) => {
    expect(() => createReportsApp(env, new Gate(), { statusLocation })).toThrow(message);
  });
});
