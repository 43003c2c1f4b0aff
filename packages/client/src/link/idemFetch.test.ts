import { describe, expect, it } from 'vitest';
import { findIdemClientError } from '../errors/IdemClientError.js';
import { idemFetch } from './idemFetch.js';

const answering = (body: string, init: ResponseInit) =>
  idemFetch(async () => new Response(body, init));

describe('idemFetch', () => {
  it('passes tRPC JSON through, success or error', async () => {
    const ok = await answering('{"result":{"data":1}}', { status: 200 })('http://x');
    expect(await ok.json()).toEqual({ result: { data: 1 } });
    const batch = await answering('[{"error":{"code":-32600}},{"result":{}}]', { status: 207 })(
      'http://x',
    );
    expect(await batch.json()).toHaveLength(2);
    const error = await answering('{"error":{"message":"no","code":-32603}}', { status: 503 })(
      'http://x',
    );
    expect(await error.json()).toEqual({ error: { message: 'no', code: -32603 } });
  });

  it('turns an HTML gateway page into HTTP_ERROR with its status and Retry-After', async () => {
    const response = await answering('<html><h1>502 Bad Gateway</h1></html>', {
      status: 502,
      headers: { 'content-type': 'text/html', 'retry-after': '7' },
    })('http://x');
    const error = await response.json().catch((e: unknown) => e);
    const idem = findIdemClientError(error);
    expect([idem?.code, idem?.status, idem?.retryAfterMs]).toEqual(['HTTP_ERROR', 502, 7000]);
    expect(idem?.message).toContain('502 Bad Gateway');
  });

  it('turns a non-tRPC JSON error body into HTTP_ERROR', async () => {
    const response = await answering('{"message":"rate limited"}', { status: 429 })('http://x');
    const error = await response.json().catch((e: unknown) => e);
    expect(findIdemClientError(error)?.status).toBe(429);
  });

  it('leaves a 2xx JSON response as it came: the response object itself, its own json()', async () => {
    const original = new Response('{"result":{"data":1}}', {
      status: 200,
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });
    const response = await idemFetch(async () => original)('http://x');
    expect(response).toBe(original);
    expect(Object.hasOwn(response, 'json')).toBe(false);
    expect(await response.json()).toEqual({ result: { data: 1 } });
  });

  it("turns a 2xx page that is not JSON (a captive portal's) into HTTP_ERROR with its status", async () => {
    const response = await answering('<html>Sign in to the Wi-Fi</html>', {
      status: 200,
      headers: { 'content-type': 'text/html' },
    })('http://x');
    const error = await response.json().catch((e: unknown) => e);
    const idem = findIdemClientError(error);
    expect([idem?.code, idem?.status]).toEqual(['HTTP_ERROR', 200]);
    expect(idem?.message).toContain('Sign in to the Wi-Fi');
  });

  it('keeps the response otherwise intact', async () => {
    const response = (await answering('{"result":{}}', {
      status: 200,
      headers: { 'idempotent-replayed': 'true' },
    })('http://x')) as Response;
    expect(response.headers.get('idempotent-replayed')).toBe('true');
    expect(response.status).toBe(200);
  });
});
