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
import { describeQueueGates, statusOf } from './queueGates.js';
import { createQueueTables, openQueueGate } from './fixtures/queueApp.js';
import { itProducedEveryReason } from './fixtures/reasonLedger.js';

const available = await postgresAvailable();
const order = { sku: 'sku-1', quantity: 2 };
const account = () => `acct_${randomUUID().replaceAll('-', '')}`;

describe.skipIf(!available)('PostgreSQL', () => {
  describeServerGates('PostgreSQL', () => postgresEnv());
  describeRecoveryGates('PostgreSQL', () => postgresEnv());
  describeOperationGates('PostgreSQL', () => postgresEnv());
  describeMetricsGates('PostgreSQL', () => postgresEnv());
  describeQueueGates('PostgreSQL', () => postgresEnv());

  it('runs 200 queued operations over two processes, at most 4 at once in each, each once', async () => {
    await using env = await postgresEnv();
    for (const statement of createQueueTables) await env.db.execute(statement);
    const entry = new URL('./fixtures/queueProcess.ts', import.meta.url);
    const processEnv = { DATABASE_URL: env.url!, MAX_DEPTH: '120', CONCURRENCY: '4' };
    await using a = await spawnServer(entry, { ...processEnv, PROCESS: 'a' });
    await using b = await spawnServer(entry, { ...processEnv, PROCESS: 'b' });
    const acct = account();
    const submit = (n: number) =>
      post(n % 2 ? a.url : b.url, 'jobs.export', { n }, { key: `job-${n}`, account: acct });
    const ids = new Map<number, string>();
    let refusals = 0;
    const submitAll = async () => {
      for (let n = 0; n < 200; n++) {
        if (ids.has(n)) continue;
        const answer = await submit(n);
        if (answer.status === 202) {
          ids.set(n, answer.json.result.data.operationId);
        } else {
          // The queue is full: a retryable answer with a wait, nothing stored.
          expect(answer.status).toBe(503);
          expect(answer.json.error.data.idem.reason).toBe('IDEMPOTENCY_QUEUE_FULL');
          expect(answer.headers['retry-after']).toBe('1');
          refusals++;
        }
      }
    };
    // The jobs wait at a closed gate: 4 run in each process, the rest queue up to the depth.
    await submitAll();
    expect(refusals).toBeGreaterThan(0);
    expect(ids.size).toBeLessThan(200);
    // The newest queued job is cancelled before any worker reaches it: it never runs.
    const victim = ids.get(Math.max(...ids.keys()))!;
    const cancel = await post(a.url, 'jobs.cancel', { operationId: victim }, { account: acct });
    expect(cancel.json.result.data).toBe('cancelled');
    // Another caller polling a real operation id learns what a random id tells: nothing.
    const theirs = await statusOf(b.url, ids.get(0)!, account());
    expect(theirs.status).toBe(404);
    expect(theirs.text).toBe((await statusOf(b.url, randomUUID(), account())).text);

    await env.db.execute(openQueueGate);
    while (ids.size < 200) {
      await new Promise((resolve) => setTimeout(resolve, 1_000)); // Retry-After: 1
      await submitAll();
    }
    await expect
      .poll(() => env.count(sql`select 1 from test_queue_runs`), { timeout: 60_000 })
      .toBe(199);
    const stats = await Promise.all(
      [a, b].map(async (server) => {
        const response = await fetch(`${server.url}/jobs.stats`);
        return ((await response.json()) as { result: { data: { [k: string]: number } } }).result
          .data;
      }),
    );
    for (const s of stats) {
      expect(s.maxRunning!).toBeLessThanOrEqual(4);
      expect(s.duplicates).toBe(0);
      expect(s.running).toBe(0);
    }
    expect(stats.reduce((sum, s) => sum + s.runs!, 0)).toBe(199);
    expect(stats.map((s) => s.maxRunning)).toEqual([4, 4]);
    expect(await env.count(sql`select 1 from test_queue_runs where operation_id = ${victim}`)).toBe(
      0,
    );
    expect(
      await env.count(
        sql`select 1 from idem_records where scope = ${acct} and state = 'COMPLETED'`,
      ),
    ).toBe(199);
  });

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

  // Last: every reason above, checked against the contract's table.
  itProducedEveryReason();
});
