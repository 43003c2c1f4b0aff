import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { idemContext, type IdemResponse } from './idemContext.js';
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
});
