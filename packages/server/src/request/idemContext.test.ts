import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { idemContext } from './idemContext.js';
import { type IdemResponse } from '../types/IdemRequest.js';
import { idemResponseMeta } from './idemResponseMeta.js';

/**
 * The response idem writes through to the adapter's (one class for every request, not one per
 * request: see `WriteThroughResponse`). Each request's headers and status must stay its own, on
 * real node responses and fetch headers.
 */
describe('idemContext: headers and status written through to the response', () => {
  it('node: each request writes its own headers and status, until they go out', async () => {
    // Two requests in flight at once: the first is answered only after the second set its own.
    const responses: { res: ServerResponse; response: IdemResponse }[] = [];
    let bothIn: () => void;
    const arrived = new Promise<void>((resolve) => (bothIn = resolve));
    const server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const { idemRequest } = idemContext({ req, res });
      responses.push({ res, response: idemRequest.response });
      if (req.url === '/replayed') {
        idemRequest.response.headers.set('Idempotent-Replayed', 'true');
      } else {
        idemRequest.response.headers.set('Retry-After', '3');
        idemRequest.response.status = 202;
      }
      if (responses.length === 2) bothIn();
      void arrived.then(() => {
        // What a procedure of tRPC's would leave: idemResponseMeta adds nothing a second time.
        expect(idemResponseMeta({ ctx: { idemRequest } })).toEqual(
          req.url === '/replayed' ? {} : { status: 202 },
        );
        res.end(req.url);
        // Once the headers went out, a late status leaves the node response alone.
        idemRequest.response.status = 409;
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

    const [replayed, accepted] = await Promise.all([
      fetch(`${base}/replayed`, { method: 'POST' }),
      fetch(`${base}/accepted`, { method: 'POST' }),
    ]);

    expect(replayed.status).toBe(200);
    expect(replayed.headers.get('idempotent-replayed')).toBe('true');
    expect(replayed.headers.get('retry-after')).toBeNull();
    expect(accepted.status).toBe(202);
    expect(accepted.headers.get('retry-after')).toBe('3');
    expect(accepted.headers.get('idempotent-replayed')).toBeNull();
    for (const { res, response } of responses) {
      expect(response.headers).toBeInstanceOf(Map);
      expect(response.written).toEqual({ headers: true, status: true });
      expect(res.statusCode).toBe(res.req.url === '/replayed' ? 200 : 202);
      expect(response.status).toBe(409);
    }
  });

  it('fetch: headers go to resHeaders, the status waits for responseMeta', () => {
    const contexts = ['a', 'b'].map((name) => {
      const resHeaders = new Headers();
      const req = new Request(`http://localhost/${name}`, { method: 'POST' });
      return { name, resHeaders, idemRequest: idemContext({ req, resHeaders }).idemRequest };
    });
    const [a, b] = contexts as [(typeof contexts)[0], (typeof contexts)[0]];
    a.idemRequest.response.headers.set('Idempotent-Replayed', 'true');
    b.idemRequest.response.status = 202;

    expect(a.resHeaders.get('idempotent-replayed')).toBe('true');
    expect(b.resHeaders.get('idempotent-replayed')).toBeNull();
    expect([...a.idemRequest.response.headers]).toEqual([['Idempotent-Replayed', 'true']]);
    expect(b.idemRequest.response.headers.size).toBe(0);
    expect(a.idemRequest.response.status).toBeUndefined();
    expect(b.idemRequest.response.status).toBe(202);
    expect(a.idemRequest.response.written).toEqual({ headers: true, status: false });
    // The fetch adapter takes the status from responseMeta; the headers are already merged.
    expect(idemResponseMeta({ ctx: { idemRequest: a.idemRequest } })).toEqual({});
    expect(idemResponseMeta({ ctx: { idemRequest: b.idemRequest } })).toEqual({ status: 202 });
  });

  it('request alone: responseMeta carries the headers and the status idem set', () => {
    // No response to write through (fastify, lambda): everything goes out through responseMeta.
    const idemRequest = () => idemContext(new Headers()).idemRequest;
    const both = idemRequest();
    both.response.headers.set('Retry-After', '3');
    both.response.status = 202;
    const meta = idemResponseMeta({ ctx: { idemRequest: both } });
    expect(Object.keys(meta)).toEqual(['headers', 'status']);
    expect([...meta.headers!]).toEqual([['retry-after', '3']]);
    expect(meta.status).toBe(202);
    const headersOnly = idemRequest();
    headersOnly.response.headers.set('Idempotent-Replayed', 'true');
    expect(Object.keys(idemResponseMeta({ ctx: { idemRequest: headersOnly } }))).toEqual([
      'headers',
    ]);
    expect(idemResponseMeta({ ctx: { idemRequest: idemRequest() } })).toEqual({});
    expect(idemResponseMeta({ ctx: {} })).toEqual({});
  });
});

/**
 * A node request's headers as idem reads them: one value per header line, whatever node joined
 * into `req.headers` (idem reads that, and `headersDistinct` only for a value with ", ").
 */
describe("idemContext: a node request's header lines", () => {
  it('keeps repeated lines apart and a line with ", " whole', async () => {
    const seen = new Map<string, unknown>();
    const server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const { idemRequest } = idemContext({ req, res });
      seen.set(req.url!, {
        keyValues: idemRequest.keyValues,
        requestId: idemRequest.requestId,
        attempt: idemRequest.attempt,
        timeoutMs: idemRequest.timeoutMs,
      });
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const { port } = server.address() as AddressInfo;
    // Raw lines: fetch and http.request would join or refuse what a client may send.
    const send = (path: string, lines: string[]) =>
      new Promise<void>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () =>
          socket.end(
            [`POST ${path} HTTP/1.1`, 'Host: x', 'Content-Length: 0', 'Connection: close']
              .concat(lines, ['', ''])
              .join('\r\n'),
          ),
        );
        socket.on('data', () => {});
        socket.on('error', reject);
        socket.on('close', () => resolve());
      });

    await send('/two-lines', ['Idempotency-Key: a', 'idempotency-key: b', 'X-Request-Id: r1']);
    await send('/comma', ['Idempotency-Key: a, b', 'Idempotency-Attempt: 2']);
    await send('/one', [
      'IDEMPOTENCY-KEY: k1',
      'Idempotency-Attempt: 1',
      'Idempotency-Timeout-Ms: 50',
    ]);
    await send('/none', []);
    await send('/empty-and-one', ['Idempotency-Key:', 'Idempotency-Key: k2']);

    expect(seen.get('/two-lines')).toEqual({
      keyValues: ['a', 'b'],
      requestId: 'r1',
      attempt: null,
      timeoutMs: null,
    });
    expect(seen.get('/comma')).toEqual({
      keyValues: ['a, b'],
      requestId: null,
      attempt: 2,
      timeoutMs: null,
    });
    expect(seen.get('/one')).toEqual({
      keyValues: ['k1'],
      requestId: null,
      attempt: 1,
      timeoutMs: 50,
    });
    expect(seen.get('/none')).toEqual({
      keyValues: [],
      requestId: null,
      attempt: null,
      timeoutMs: null,
    });
    expect(seen.get('/empty-and-one')).toEqual({
      keyValues: ['', 'k2'],
      requestId: null,
      attempt: null,
      timeoutMs: null,
    });
  });
});
