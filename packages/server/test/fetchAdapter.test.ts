import { fetchRequestHandler } from '@trpc/server/adapters/fetch';
import { describe, expect, it } from 'vitest';
import { idemContext, idemResponseMeta } from '../src/index.js';
import { pgliteEnv } from './fixtures/databases.js';
import { createTestApp } from './fixtures/testApp.js';

describe('fetch adapter', () => {
  it('reads the key from fetch Headers, replays with Idempotent-Replayed, refuses two keys', async () => {
    await using env = await pgliteEnv();
    const app = createTestApp(env.store);
    const handle = (headers: HeadersInit) =>
      fetchRequestHandler({
        endpoint: '/trpc',
        router: app.router,
        req: new Request('http://localhost/trpc/orders.create', {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            authorization: 'Bearer acct_fetch',
            ...Object.fromEntries(new Headers(headers)),
          },
          body: JSON.stringify({ sku: 'f', quantity: 1 }),
        }),
        createContext: ({ req }) => ({ ...idemContext(req.headers), account: 'acct_fetch' }),
        responseMeta: idemResponseMeta,
      });
    const first = await handle({ 'Idempotency-Key': 'fetch-1' });
    const second = await handle({ 'Idempotency-Key': 'fetch-1' });
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.headers.get('Idempotent-Replayed')).toBe('true');
    expect(await second.text()).toBe(await first.text());
    expect(app.counter.calls['orders.create']).toBe(1);

    const twoKeys = new Headers();
    twoKeys.append('Idempotency-Key', 'fetch-a');
    twoKeys.append('Idempotency-Key', 'fetch-b');
    const refused = await handle(twoKeys);
    expect(refused.status).toBe(400);
    expect((await refused.json()).error.data.idem.reason).toBe('IDEMPOTENCY_KEY_INVALID');
  });
});
