import { randomUUID } from 'node:crypto';
import type { ClaimTiming } from '@idem/contract';
import { postgresAvailable } from '@idem/fixtures';
import { createPostgresJsStore } from '@idem/store-drizzle/postgres-js';
import { sql } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { postgresEnv } from './fixtures/databases.js';
import { post, serve } from './fixtures/httpHarness.js';
import { spawnServer } from './fixtures/spawnServer.js';
import { createTestApp, Gate } from './fixtures/testApp.js';
import type { IdemServerEvent } from '../src/index.js';
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

  /**
   * `requests` concurrent requests with one key (60 by default), spread over two server
   * processes, each sending `Idempotency-Attempt: attempt` when given: one business row, one
   * execution answered as executed, every other answer a replay of it or a 409 in progress.
   * Returns the handler calls summed over both processes.
   */
  async function storm(
    claim: ClaimTiming,
    { requests = 60, attempt }: { requests?: number; attempt?: number } = {},
  ): Promise<number> {
    await using env = await postgresEnv();
    const processEnv = { DATABASE_URL: env.url!, WORK_MS: '150', POOL_MAX: '10', CLAIM: claim };
    const entry = new URL('./fixtures/serveProcess.ts', import.meta.url);
    await using a = await spawnServer(entry, processEnv);
    await using b = await spawnServer(entry, processEnv);
    const acct = account();
    const responses = await Promise.all(
      Array.from({ length: requests }, (_, i) =>
        post(i % 2 ? a.url : b.url, 'orders.create', order, {
          key: 'storm',
          account: acct,
          ...(attempt === undefined ? {} : { attempt }),
        }),
      ),
    );
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s >= 500)).toEqual([]);
    expect(statuses.every((s) => s === 200 || s === 409)).toBe(true);
    const executed = responses.filter((r) => r.status === 200 && !r.headers['idempotent-replayed']);
    const replayed = responses.filter((r) => r.headers['idempotent-replayed'] === 'true');
    const conflicts = responses.filter((r) => r.status === 409);
    expect(executed).toHaveLength(1);
    expect(replayed.length + conflicts.length).toBe(requests - 1);
    for (const r of replayed) expect(r.text).toBe(executed[0]!.text);
    for (const r of conflicts)
      expect(r.json.error.data.idem.reason).toBe('IDEMPOTENCY_REQUEST_IN_PROGRESS');
    expect(await env.count(sql`select 1 from test_orders where scope = ${acct}`)).toBe(1);
    expect(await env.count(sql`select 1 from idem_records where scope = ${acct}`)).toBe(1);
    // Handler calls summed over both processes.
    const calls = await Promise.all(
      [a.url, b.url].map(
        async (url) => (await fetch(`${url}/stats`).then((r) => r.json())).result.data,
      ),
    );
    return calls.reduce((n, c) => n + (c['orders.create'] ?? 0), 0);
  }

  it('runs 60 concurrent identical requests across two server processes: one commits, at most one run per process', async () => {
    // At commit, each process lets one request run the key at a time; the others wait for it,
    // then replay. The two processes' runners may both read the key before either commits: both
    // run, one commits, the other rolls back and replays. So at most two runs, never more.
    const handlerCalls = await storm('at-commit');
    expect(handlerCalls).toBeGreaterThanOrEqual(1);
    expect(handlerCalls).toBeLessThanOrEqual(2);
  });

  it('runs 200 concurrent requests that all claim to be a first attempt at most once per process', async () => {
    // `Idempotency-Attempt: 1` on every request (a double click, a reload, an old client): the
    // header decides nothing; every request reads its key before its handler may run.
    const handlerCalls = await storm('at-commit', { requests: 200, attempt: 1 });
    expect(handlerCalls).toBeGreaterThanOrEqual(1);
    expect(handlerCalls).toBeLessThanOrEqual(2);
  });

  it('claim first: runs 60 concurrent identical requests across two server processes once', async () => {
    expect(await storm('first')).toBe(1);
  });

  it('claim first: answers a duplicate 409 once the bounded lock wait runs out, then replays after commit', async () => {
    await using env = await postgresEnv();
    const gate = new Gate();
    const app = createTestApp(env.store, { gate, lockTimeoutMs: 200, claim: 'first' });
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

  it('at commit: a record that waits behind an uncommitted claim-first row past the lock timeout answers 409; after commit, a replay', async () => {
    await using env = await postgresEnv();
    // The same procedure served claim-first by one app (as during a deploy that changes it) and
    // at commit by another, on one database.
    const gate = new Gate();
    const claimFirst = createTestApp(env.store, { gate, claim: 'first' });
    const events: IdemServerEvent[] = [];
    const atCommit = createTestApp(env.store, { lockTimeoutMs: 200, events });
    await using holder = await serve(claimFirst.router);
    await using server = await serve(atCommit.router);
    const acct = account();
    const first = post(holder.url, 'orders.slow', order, { key: 'k-held', account: acct });
    // The claim is in, uncommitted, and the handler waits at the gate.
    await expect.poll(() => claimFirst.counter.calls['orders.slow'] ?? 0).toBe(1);
    const duplicate = await post(server.url, 'orders.slow', order, {
      key: 'k-held',
      account: acct,
    });
    expect(duplicate.status).toBe(409);
    expect(duplicate.json.error.data.idem.reason).toBe('IDEMPOTENCY_REQUEST_IN_PROGRESS');
    expect(duplicate.headers['retry-after']).toBe('1');
    // It read no committed row, ran its handler, and its transaction rolled back.
    expect(atCommit.counter.calls['orders.slow']).toBe(1);
    expect(events.map((e) => (e.type === 'executed' ? `executed ${e.outcome}` : e.type))).toEqual([
      'executed rolled-back',
      'rejected',
    ]);
    gate.open();
    const winner = await first;
    expect(winner.status).toBe(200);
    const replay = await post(server.url, 'orders.slow', order, { key: 'k-held', account: acct });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.text).toBe(winner.text);
    expect(atCommit.counter.calls['orders.slow']).toBe(1);
    expect(await env.count(sql`select 1 from test_orders where scope = ${acct}`)).toBe(1);
  });

  /**
   * A COMMIT that takes its time (a slow flush, a synchronous standby): orders of sku 'held' wait
   * at commit, in a deferred trigger, for an advisory lock the test holds. By then the
   * transaction's record is in the unique index, uncommitted.
   */
  async function holdCommits(env: Awaited<ReturnType<typeof postgresEnv>>) {
    await env.db.execute(sql`create function hold_commit() returns trigger language plpgsql
      set lock_timeout = 0 as $$ begin perform pg_advisory_xact_lock(1414); return null; end $$`);
    await env.db.execute(sql`create constraint trigger hold_commit after insert on test_orders
      deferrable initially deferred for each row when (new.sku = 'held')
      execute function hold_commit()`);
    const holder = postgres(env.url!, { max: 1, onnotice: () => {} });
    await holder`select pg_advisory_lock(1414)`;
    return {
      /** Resolves once a COMMIT waits for the lock. */
      waiting: () =>
        expect
          .poll(() =>
            env.count(sql`select 1 from pg_locks where locktype = 'advisory' and not granted`),
          )
          .toBe(1),
      release: () => holder`select pg_advisory_unlock(1414)`,
      [Symbol.asyncDispose]: () => holder.end({ timeout: 1 }),
    };
  }

  it('at commit, another process: a record that waits behind a held COMMIT past the lock timeout answers 409; after commit, a replay', async () => {
    await using env = await postgresEnv();
    await using commits = await holdCommits(env);
    const events: IdemServerEvent[] = [];
    // Two apps on one database: two processes' worth of idem, each with its own in-flight keys.
    const app = createTestApp(env.store, { lockTimeoutMs: 200, events });
    const other = createTestApp(env.store, { lockTimeoutMs: 200, events });
    await using server = await serve(app.router);
    await using otherServer = await serve(other.router);
    const acct = account();
    const held = { sku: 'held', quantity: 1 };
    const first = post(server.url, 'orders.create', held, { key: 'k-commit', account: acct });
    // Its handler ran and its record went out with the COMMIT, which now waits for the lock.
    await commits.waiting();
    const duplicate = await post(otherServer.url, 'orders.create', held, {
      key: 'k-commit',
      account: acct,
    });
    expect(duplicate.status).toBe(409);
    expect(duplicate.json.error.data.idem.reason).toBe('IDEMPOTENCY_REQUEST_IN_PROGRESS');
    expect(duplicate.headers['retry-after']).toBe('1');
    // The other process ran its handler; its record waited on the index, then rolled back.
    expect(other.counter.calls['orders.create']).toBe(1);
    await commits.release();
    const winner = await first;
    expect(winner.status).toBe(200);
    expect(winner.headers['idempotent-replayed']).toBeUndefined();
    const replay = await post(otherServer.url, 'orders.create', held, {
      key: 'k-commit',
      account: acct,
    });
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.text).toBe(winner.text);
    expect(app.counter.calls['orders.create']).toBe(1);
    expect(other.counter.calls['orders.create']).toBe(1);
    // The duplicate's order rolled back with its record.
    expect(await env.count(sql`select 1 from test_orders where scope = ${acct}`)).toBe(1);
    expect(
      events.map((e) => (e.type === 'executed' ? `executed ${e.outcome}` : e.type)).sort(),
    ).toEqual(['executed completed', 'executed rolled-back', 'rejected', 'replayed']);
  });

  it("at commit, another process: a duplicate whose handler fails on the first one's business row answers with the first one's outcome", async () => {
    await using env = await postgresEnv();
    // One order per account and sku, enforced by the business table (as users' unique keys are).
    await env.db.execute(
      sql`create unique index test_orders_one_per_sku on test_orders (scope, sku)`,
    );
    const gate = new Gate();
    const events: IdemServerEvent[] = [];
    const app = createTestApp(env.store, { gate, events });
    const other = createTestApp(env.store, { events });
    await using server = await serve(app.router);
    await using otherServer = await serve(other.router);
    const acct = account();
    const first = post(server.url, 'orders.slow', order, { key: 'k-unique', account: acct });
    // Its order is in, uncommitted, and the handler waits at the gate.
    await expect.poll(() => app.counter.calls['orders.slow'] ?? 0).toBe(1);
    const duplicate = post(otherServer.url, 'orders.slow', order, {
      key: 'k-unique',
      account: acct,
    });
    // The duplicate's INSERT waits on the first one's uncommitted index entry.
    await expect
      .poll(() =>
        env.count(sql`select 1 from pg_locks where locktype = 'transactionid' and not granted`),
      )
      .toBe(1);
    gate.open();
    const winner = await first;
    const answer = await duplicate;
    expect(winner.status).toBe(200);
    // The duplicate's INSERT failed (23505, a 500 of its handler's); the key's outcome answers.
    expect(answer.status).toBe(200);
    expect(answer.headers['idempotent-replayed']).toBe('true');
    expect(answer.text).toBe(winner.text);
    expect(other.counter.calls['orders.slow']).toBe(1);
    expect(await env.count(sql`select 1 from test_orders where scope = ${acct}`)).toBe(1);
    expect(
      events.map((e) => (e.type === 'executed' ? `executed ${e.outcome}` : e.type)).sort(),
    ).toEqual(['executed completed', 'executed rolled-back', 'replayed']);
  });

  it('at commit, the same process: a duplicate waits for the request running its key, never runs, 409 past the lock timeout', async () => {
    await using env = await postgresEnv();
    await using commits = await holdCommits(env);
    const events: IdemServerEvent[] = [];
    const app = createTestApp(env.store, { lockTimeoutMs: 200, events });
    await using server = await serve(app.router);
    const acct = account();
    const held = { sku: 'held', quantity: 1 };
    const first = post(server.url, 'orders.create', held, { key: 'k-commit', account: acct });
    await commits.waiting();
    const duplicate = await post(server.url, 'orders.create', held, {
      key: 'k-commit',
      account: acct,
    });
    expect(duplicate.status).toBe(409);
    expect(duplicate.json.error.data.idem.reason).toBe('IDEMPOTENCY_REQUEST_IN_PROGRESS');
    expect(app.counter.calls['orders.create']).toBe(1);
    await commits.release();
    expect((await first).status).toBe(200);
    expect(await env.count(sql`select 1 from test_orders where scope = ${acct}`)).toBe(1);
    expect(
      events.map((e) => (e.type === 'executed' ? `executed ${e.outcome}` : e.type)).sort(),
    ).toEqual(['executed completed', 'rejected']);
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
