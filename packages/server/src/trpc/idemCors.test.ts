import type { AddressInfo } from 'node:net';
import { initTRPC } from '@trpc/server';
import { createHTTPServer } from '@trpc/server/adapters/standalone';
import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { describe, expect, it, onTestFinished } from 'vitest';
import { IDEM_CORS_ALLOW_HEADERS, IDEM_CORS_EXPOSE_HEADERS, idemCors } from './idemCors.js';

const SHOP = 'http://127.0.0.1:5173';
const t = initTRPC.create();
// A procedure that answers with idem's response headers set, as a replay does.
const router = t.router({
  echo: t.procedure.mutation(() => 'ok'),
});

async function standalone(cors: ReturnType<typeof idemCors>): Promise<string> {
  const server = createHTTPServer({
    router,
    basePath: '/trpc/',
    middleware: cors.middleware,
    responseMeta: () => ({ headers: new Headers({ 'Idempotent-Replayed': 'true' }) }),
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const preflight = (origin: string) => ({
  method: 'OPTIONS',
  headers: {
    origin,
    'access-control-request-method': 'POST',
    'access-control-request-headers': 'content-type,idempotency-key,authorization',
  },
});

describe('idemCors', () => {
  it('lists every idem request header and the response headers the client reads', () => {
    expect(IDEM_CORS_ALLOW_HEADERS).toEqual([
      'Content-Type',
      'Idempotency-Key',
      'Idempotency-Attempt',
      'Idempotency-Timeout-Ms',
      'X-Request-Id',
    ]);
    expect(IDEM_CORS_EXPOSE_HEADERS).toEqual([
      'Idempotent-Replayed',
      'Retry-After',
      'Location',
      'Idempotency-Protected',
    ]);
  });

  it('standalone: answers an allowed preflight with the headers, and exposes idem headers', async () => {
    const url = await standalone(idemCors({ origins: [SHOP], allowHeaders: ['Authorization'] }));
    const answer = await fetch(`${url}/trpc/echo`, preflight(SHOP));
    expect(answer.status).toBe(204);
    expect(answer.headers.get('access-control-allow-origin')).toBe(SHOP);
    expect(answer.headers.get('access-control-allow-headers')).toBe(
      'Content-Type, Idempotency-Key, Idempotency-Attempt, Idempotency-Timeout-Ms, X-Request-Id, Authorization',
    );
    expect(answer.headers.get('access-control-allow-methods')).toContain('POST');
    expect(answer.headers.get('access-control-max-age')).toBe('600');
    expect(answer.headers.get('vary')).toBe('Origin');

    const call = await fetch(`${url}/trpc/echo`, {
      method: 'POST',
      headers: { origin: SHOP, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(call.status).toBe(200);
    expect(call.headers.get('access-control-allow-origin')).toBe(SHOP);
    expect(call.headers.get('access-control-expose-headers')).toBe(
      'Idempotent-Replayed, Retry-After, Location, Idempotency-Protected',
    );
    expect(call.headers.get('idempotent-replayed')).toBe('true');
    expect(call.headers.get('vary')).toMatch(/\bOrigin\b/);
  });

  it('standalone: gives an origin that is not listed no CORS headers (the browser blocks it)', async () => {
    const url = await standalone(idemCors({ origins: [SHOP] }));
    const answer = await fetch(`${url}/trpc/echo`, preflight('http://127.0.0.1:9999'));
    expect(answer.status).toBe(204);
    expect(answer.headers.get('access-control-allow-origin')).toBeNull();
    expect(answer.headers.get('access-control-allow-headers')).toBeNull();
    const call = await fetch(`${url}/trpc/echo`, {
      method: 'POST',
      headers: { origin: 'http://127.0.0.1:9999', 'content-type': 'application/json' },
      body: '{}',
    });
    expect(call.headers.get('access-control-expose-headers')).toBeNull();
  });

  it('fetch adapter: wraps the handler, answers preflights and adds the headers', async () => {
    const cors = idemCors({ origins: (origin) => origin.endsWith(':5173'), credentials: true });
    const handler = cors.fetch((req: Request) =>
      fetchRequestHandler({
        endpoint: '/trpc',
        req,
        router,
        responseMeta: () => ({ headers: new Headers({ 'Retry-After': '2', Vary: 'Accept' }) }),
      }),
    );
    const pre = await handler(new Request('http://api/trpc/echo', preflight(SHOP)));
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-origin')).toBe(SHOP);
    expect(pre.headers.get('access-control-allow-credentials')).toBe('true');
    const call = await handler(
      new Request('http://api/trpc/echo', {
        method: 'POST',
        headers: { origin: SHOP, 'content-type': 'application/json' },
        body: '{}',
      }),
    );
    expect(call.status).toBe(200);
    expect(await call.json()).toEqual({ result: { data: 'ok' } });
    expect(call.headers.get('access-control-expose-headers')).toBe(
      'Idempotent-Replayed, Retry-After, Location, Idempotency-Protected',
    );
    expect(call.headers.get('retry-after')).toBe('2');
    // tRPC's own Vary stays, with Origin added.
    expect(call.headers.get('vary')).toMatch(/^trpc-accept, accept, .*Origin$/i);
  });

  it.each([
    [{ origins: ['http://127.0.0.1:5173/'] }, /did you mean http:\/\/127.0.0.1:5173\?/],
    [{ origins: ['shop.example.com'] }, /scheme:\/\/host/],
    [{ origins: ['*'], credentials: true }, /never with credentials/],
    [{ origins: ['*', SHOP] }, /alone/],
    [{ origins: [SHOP], maxAgeSeconds: -1 }, /maxAgeSeconds/],
  ])('refuses a setting that could never work at start-up: %j', (options, message) => {
    expect(() => idemCors(options)).toThrow(message);
  });
});
