/**
 * Every procedure that fails because the database went away answers 503 with Retry-After, masked
 * (an error id, the detail in `onMasked`), not a 500 that clients do not retry: a plain query, an
 * unkeyed mutation and a keyed one, unbatched and batched, on the standalone adapter and on the
 * fetch adapter, and when `createContext` itself read the database. A handler's plain Error is
 * still a masked 500. The database is real PostgreSQL behind a TCP proxy; stopping the proxy takes
 * it away (every connection closed, new ones refused).
 */
import { createServer, connect, type AddressInfo, type Server, type Socket } from 'node:net';
import { request } from 'node:http';
import { createTestDatabase, httpPost, postgresAvailable, type HttpResult } from '@idem/fixtures';
import { createPostgresJsStore, migrate } from '@idem/store-drizzle/postgres-js';
import { initTRPC, type AnyTRPCRouter } from '@trpc/server';
import { createHTTPServer } from '@trpc/server/adapters/standalone';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import type { IdemMeta } from '@idem/contract';
import { sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  createIdempotency,
  idemContext,
  idemErrorFormatter,
  idemResponseMeta,
  retryUnsafe,
  type IdemContext,
  type MaskedError,
} from '../src/index.js';
import { TEST_KEY_SECRET } from './fixtures/testApp.js';

const available = await postgresAvailable();

/** A TCP proxy to the test PostgreSQL; `stop()` closes every connection and refuses new ones. */
async function startProxy(target: { host: string; port: number }) {
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(target.port, target.host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => socket.destroy());
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const socket of sockets) socket.destroy();
      }),
  };
}

type Context = IdemContext & { account: string };

/** Plain procedures on the database, and one keyed mutation, under idem's root formatter. */
function createOutageApp(db: ReturnType<typeof drizzle>, masked: MaskedError[]) {
  const t = initTRPC
    .context<Context>()
    .meta<IdemMeta>()
    .create({
      isDev: true,
      errorFormatter: idemErrorFormatter({ onMasked: (m) => masked.push(m) }),
    });
  const idem = createIdempotency({
    store: createPostgresJsStore(db),
    keySecret: TEST_KEY_SECRET,
    scope: (ctx: Context) => ctx.account,
  });
  const count = async () => {
    const rows = (await db.execute(sql`select count(*)::int as n from outage_notes`)) as unknown;
    return (rows as { n: number }[])[0]!.n;
  };
  return t.router({
    notes: t.router({
      count: t.procedure.query(count),
      add: t.procedure
        .input(z.object({ text: z.string() }))
        .concat(retryUnsafe('adds a note on every call'))
        .mutation(async ({ input }) => {
          await db.execute(sql`insert into outage_notes (text) values (${input.text})`);
          return { added: true };
        }),
      create: t.procedure
        .input(z.object({ text: z.string() }))
        .concat(idem.procedure())
        .mutation(async ({ ctx, input }) => {
          await ctx.idem.tx.execute(sql`insert into outage_notes (text) values (${input.text})`);
          return { created: true };
        }),
      broken: t.procedure.query(() => {
        throw new Error('a bug: the handler read undefined.total');
      }),
    }),
  });
}

/** Serves `router` on the standalone adapter; dispose to close. */
async function serve(options: Parameters<typeof createHTTPServer>[0]) {
  const server = createHTTPServer(options);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    [Symbol.asyncDispose]: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** GETs a query over node http, the way a raw-HTTP integrator (or tRPC's httpLink) does. */
function httpGet(url: string): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    request(url, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          text,
          json: JSON.parse(text),
        });
      });
    })
      .on('error', reject)
      .end();
  });
}

/** The wire of one answer, whichever adapter made it. */
interface Wire {
  status: number;
  retryAfter: string | null;
  json: any;
}

const fromNode = (result: HttpResult): Wire => ({
  status: result.status,
  retryAfter: (result.headers['retry-after'] as string | undefined) ?? null,
  json: result.json,
});

async function fromFetch(response: Response): Promise<Wire> {
  return {
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    json: await response.json(),
  };
}

/** The error of an answer masked as an unreachable database's 503, and its id. */
function expectUnavailable(error: any, masked: MaskedError[]): void {
  expect(error.data).toMatchObject({ code: 'SERVICE_UNAVAILABLE', httpStatus: 503 });
  expect(error.data.stack).toBeUndefined();
  expect(error.data.idem).toBeUndefined();
  const id = /^Internal server error; error id (err_[0-9a-f]{16})$/.exec(error.message)?.[1];
  expect(id, error.message).toBeDefined();
  expect(masked.filter((m) => m.errorId === id)).toHaveLength(1);
}

describe.skipIf(!available)('a database outage answers 503 with Retry-After (PostgreSQL)', () => {
  const masked: MaskedError[] = [];
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let client: postgres.Sql;
  let proxy: Awaited<ReturnType<typeof startProxy>>;
  let router: AnyTRPCRouter;
  /** The standalone adapter with idemContext(opts) and no responseMeta: the formatter alone. */
  let plain: Awaited<ReturnType<typeof serve>>;
  /** The standalone adapter whose createContext reads the database, with idemResponseMeta. */
  let authenticating: Awaited<ReturnType<typeof serve>>;
  const handleFetch = (url: string, init?: RequestInit) =>
    fetchRequestHandler({
      endpoint: '/trpc',
      router,
      req: new Request(`http://localhost/trpc/${url}`, init),
      createContext: (opts) => ({ ...idemContext(opts), account: 'acct_fetch' }),
      responseMeta: idemResponseMeta,
    });

  beforeAll(async () => {
    database = await createTestDatabase('idem_outage_503');
    const target = new URL(database.url);
    proxy = await startProxy({ host: target.hostname, port: Number(target.port || 5432) });
    const proxied = new URL(database.url);
    proxied.port = String(proxy.port);
    // No backoff between reconnections: each query during the outage fails at once, refused,
    // instead of waiting out postgres.js's growing delay (up to 20 s) for its turn to fail.
    client = postgres(proxied.toString(), {
      max: 2,
      connect_timeout: 2,
      backoff: () => 0,
      onnotice: () => {},
    });
    const db = drizzle(client);
    await migrate(db);
    await db.execute(sql`create table outage_notes (id serial primary key, text text not null)`);
    router = createOutageApp(db, masked);
    plain = await serve({
      router,
      createContext: (opts) => ({ ...idemContext(opts), account: 'acct_plain' }),
    });
    authenticating = await serve({
      router,
      createContext: async (opts) => {
        // A session looked up in the database, as many apps do before any procedure runs.
        await client`select 1`;
        return { ...idemContext(opts), account: 'acct_auth' };
      },
      responseMeta: idemResponseMeta,
    });
  });
  afterAll(async () => {
    await plain?.[Symbol.asyncDispose]();
    await authenticating?.[Symbol.asyncDispose]();
    await client?.end({ timeout: 1 });
    await database?.drop();
  });

  it('before the outage, the same procedures answer 200; a plain Error is a masked 500', async () => {
    expect(fromNode(await httpGet(`${plain.url}/notes.count`))).toMatchObject({ status: 200 });
    expect((await httpGet(`${authenticating.url}/notes.count`)).status).toBe(200);
    const added = await httpPost(`${plain.url}/notes.add`, '{"text":"a"}', {});
    expect(added.status).toBe(200);
    const broken = fromNode(await httpGet(`${plain.url}/notes.broken`));
    expect(broken).toMatchObject({ status: 500, retryAfter: null });
    expect(broken.json.error.data).toMatchObject({
      code: 'INTERNAL_SERVER_ERROR',
      httpStatus: 500,
    });
    expect(broken.json.error.message).toMatch(/^Internal server error; error id err_/);
  });

  describe('during the outage', () => {
    beforeAll(async () => {
      await proxy.stop();
    });

    it('standalone, formatter alone: a plain query and an unkeyed mutation answer 503 + Retry-After', async () => {
      const query = fromNode(await httpGet(`${plain.url}/notes.count`));
      expect(query).toMatchObject({ status: 503, retryAfter: '1' });
      expectUnavailable(query.json.error, masked);
      const mutation = fromNode(await httpPost(`${plain.url}/notes.add`, '{"text":"b"}', {}));
      expect(mutation).toMatchObject({ status: 503, retryAfter: '1' });
      expectUnavailable(mutation.json.error, masked);
    });

    it('standalone: a batch of queries answers 503 + Retry-After, each item masked', async () => {
      const batch = fromNode(
        await httpGet(
          `${plain.url}/notes.count,notes.count?batch=1&input=${encodeURIComponent('{}')}`,
        ),
      );
      expect(batch).toMatchObject({ status: 503, retryAfter: '1' });
      expect(batch.json).toHaveLength(2);
      for (const item of batch.json) expectUnavailable(item.error, masked);
    });

    it('a keyed mutation answers idem’s own 503, with the same code and Retry-After', async () => {
      const keyed = fromNode(
        await httpPost(`${plain.url}/notes.create`, '{"text":"c"}', { 'Idempotency-Key': 'k-1' }),
      );
      expect(keyed).toMatchObject({ status: 503, retryAfter: '1' });
      expect(keyed.json.error.data).toMatchObject({
        code: 'SERVICE_UNAVAILABLE',
        idem: { reason: 'IDEMPOTENCY_STORE_UNAVAILABLE' },
      });
    });

    it('a handler that throws a plain Error is still a masked 500, without Retry-After', async () => {
      const broken = fromNode(await httpGet(`${plain.url}/notes.broken`));
      expect(broken).toMatchObject({ status: 500, retryAfter: null });
      expect(broken.json.error.data.code).toBe('INTERNAL_SERVER_ERROR');
      expect(broken.json.error.message).toMatch(/^Internal server error; error id err_/);
    });

    it('createContext that reads the database: 503 + Retry-After from idemResponseMeta', async () => {
      const query = fromNode(await httpGet(`${authenticating.url}/notes.count`));
      expect(query).toMatchObject({ status: 503, retryAfter: '1' });
      expectUnavailable(query.json.error, masked);
    });

    it('fetch adapter: query, batch and unkeyed mutation answer 503 + Retry-After', async () => {
      const query = await fromFetch(await handleFetch('notes.count'));
      expect(query).toMatchObject({ status: 503, retryAfter: '1' });
      expectUnavailable(query.json.error, masked);

      const batch = await fromFetch(
        await handleFetch(`notes.count,notes.count?batch=1&input=${encodeURIComponent('{}')}`),
      );
      expect(batch).toMatchObject({ status: 503, retryAfter: '1' });
      for (const item of batch.json) expectUnavailable(item.error, masked);

      const mutation = await fromFetch(
        await handleFetch('notes.add', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: '{"text":"d"}',
        }),
      );
      expect(mutation).toMatchObject({ status: 503, retryAfter: '1' });
      expectUnavailable(mutation.json.error, masked);

      const broken = await fromFetch(await handleFetch('notes.broken'));
      expect(broken).toMatchObject({ status: 500, retryAfter: null });
    });

    it('onMasked got each error with its cause chain: the driver said the connection failed', () => {
      const unavailable = masked.filter((m) => m.path === 'notes.count');
      expect(unavailable.length).toBeGreaterThan(0);
      for (const { error } of unavailable) {
        let cause: unknown = error;
        const codes: unknown[] = [];
        while (cause instanceof Error) {
          codes.push((cause as { code?: unknown }).code);
          cause = cause.cause;
        }
        expect(codes.some((code) => code === 'ECONNREFUSED' || code === 'CONNECTION_CLOSED')).toBe(
          true,
        );
      }
    });
  });
});
