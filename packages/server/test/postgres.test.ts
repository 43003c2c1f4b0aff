import { randomUUID } from 'node:crypto';
import { postgresAvailable } from '@idem/testing';
import { createPostgresJsStore } from '@idem/store-drizzle/postgres-js';
import { sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { postgresEnv } from './fixtures/databases.js';
import { post, serve } from './fixtures/httpHarness.js';
import { spawnServer } from './fixtures/spawnServer.js';
import { createTestApp, Gate } from './fixtures/testApp.js';
import { describeMetricsGates } from './metricsGates.js';
import { describeOperationGates } from './operationGates.js';
import { describeRecoveryGates } from './recoveryGates.js';
import { describeServerGates } from './serverGates.js';

const available = await postgresAvailable();
const order = { sku: 'sku-1', quantity: 2 };
const account = () => `acct_${randomUUID().replaceAll('-', '')}`;

describe.skipIf(!available)('PostgreSQL', () => {
  describeServerGates('PostgreSQL', () => postgresEnv());
  describeRecoveryGates('PostgreSQL', () => postgresEnv());
  describeOperationGates('PostgreSQL', () => postgresEnv());
  describeMetricsGates('PostgreSQL', () => postgresEnv());

  it('runs 60 concurrent identical requests across two server processes once', async () => {
    await using env = await postgresEnv();
    const processEnv = { DATABASE_URL: env.url!, WORK_MS: '150', POOL_MAX: '10' };
    const entry = new URL('./fixtures/serveProcess.ts', import.meta.url);
    await using a = await spawnServer(entry, processEnv);
    await using b = await spawnServer(entry, processEnv);
    const acct = account();
    const responses = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        post(i % 2 ? a.url : b.url, 'orders.create', order, { key: 'storm', account: acct }),
      ),
    );
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s >= 500)).toEqual([]);
    expect(statuses.every((s) => s === 200 || s === 409)).toBe(true);
    const executed = responses.filter((r) => r.status === 200 && !r.headers['idempotent-replayed']);
    const replayed = responses.filter((r) => r.headers['idempotent-replayed'] === 'true');
    const conflicts = responses.filter((r) => r.status === 409);
    expect(executed).toHaveLength(1);
    expect(replayed.length + conflicts.length).toBe(59);
    for (const r of replayed) expect(r.text).toBe(executed[0]!.text);
    for (const r of conflicts)
      expect(r.json.error.data.idem.reason).toBe('IDEMPOTENCY_REQUEST_IN_PROGRESS');
    // Handler calls summed over both processes, and business rows.
    const calls = await Promise.all(
      [a.url, b.url].map(
        async (url) => (await fetch(`${url}/stats`).then((r) => r.json())).result.data,
      ),
    );
    const handlerCalls = calls.reduce((n, c) => n + (c['orders.create'] ?? 0), 0);
    expect(handlerCalls).toBe(1);
    expect(await env.count(sql`select 1 from test_orders where scope = ${acct}`)).toBe(1);
  });

  it('answers a local-mode duplicate 409 once the bounded lock wait runs out, then replays after commit', async () => {
    await using env = await postgresEnv();
    const gate = new Gate();
    const app = createTestApp(env.store, { gate, lockTimeoutMs: 200 });
    await using server = await serve(app.router);
    const acct = account();
    const first = post(server.url, 'orders.slow', order, { key: 'k-slow', account: acct });
    await expect.poll(() => app.counter.calls['orders.slow'] ?? 0).toBe(1);
    const duplicate = await post(server.url, 'orders.slow', order, {
      key: 'k-slow',
      account: acct,
    });
    expect(duplicate.status).toBe(409);
    expect(duplicate.json.error.data.idem.reason).toBe('IDEMPOTENCY_REQUEST_IN_PROGRESS');
    expect(duplicate.headers['retry-after']).toBe('1');
    gate.open();
    expect((await first).status).toBe(200);
    const replay = await post(server.url, 'orders.slow', order, { key: 'k-slow', account: acct });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(app.counter.calls['orders.slow']).toBe(1);
  });

  it('answers 503 IDEMPOTENCY_STORE_UNAVAILABLE when the store is down, and runs nothing', async () => {
    // Port 1 on loopback: nothing listens, the connection is refused at once.
    const client = postgres('postgres://postgres@127.0.0.1:1/none', {
      max: 1,
      connect_timeout: 2,
      onnotice: () => {},
    });
    const app = createTestApp(createPostgresJsStore(drizzle(client)));
    await using server = await serve(app.router);
    const res = await post(server.url, 'orders.create', order, {
      key: 'k-down',
      account: account(),
    });
    expect(res.status).toBe(503);
    expect(res.json.error.data.idem.reason).toBe('IDEMPOTENCY_STORE_UNAVAILABLE');
    expect(res.headers['retry-after']).toBe('1');
    expect(app.counter.calls['orders.create']).toBeUndefined();
    await client.end({ timeout: 1 });
  });
});
