import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { RecoveryStore } from '@idem/contract';
import type { TestEnv } from './fixtures/databases.js';
import { post, serve } from './fixtures/httpHarness.js';
import { createQueueApp, createQueueTables, openQueueGate } from './fixtures/queueApp.js';

const account = () => `acct_${randomUUID().replaceAll('-', '')}`;

/** GETs the status query as `acct` (tRPC queries travel as GET). */
export async function statusOf(url: string, operationId: string, acct: string) {
  const input = encodeURIComponent(JSON.stringify({ operationId }));
  const response = await fetch(`${url}/jobs.status?input=${input}`, {
    headers: { authorization: `Bearer ${acct}` },
  });
  return { status: response.status, text: await response.text() };
}

/** Queued long-running work on one process; once per database. */
export function describeQueueGates(name: string, makeEnv: () => Promise<TestEnv>): void {
  describe(`queue gates on ${name}`, () => {
    it('queues accepted work, refuses past its depth (retryable), never runs a cancelled job, and runs each job once within the limit', async () => {
      await using env = await makeEnv();
      for (const statement of createQueueTables) await env.db.execute(statement);
      const store = env.store as unknown as RecoveryStore<unknown>;
      const app = createQueueApp(env.db, store, { maxDepth: 4, process: 'one' });
      await using server = await serve(app.router);
      const acct = account();
      const submit = (n: number) =>
        post(server.url, 'jobs.export', { n }, { key: `job-${n}`, account: acct });

      const ids: string[] = [];
      for (let n = 0; n < 4; n++) {
        const accepted = await submit(n);
        expect(accepted.status).toBe(202);
        expect(accepted.json.result.data.state).toBe('PENDING');
        ids.push(accepted.json.result.data.operationId);
      }
      // Nothing runs without a worker pool: the jobs wait in the queue.
      expect(app.stats.running).toBe(0);
      const full = await submit(4);
      expect(full.status).toBe(503);
      expect(full.json.error.data.idem.reason).toBe('IDEMPOTENCY_QUEUE_FULL');
      expect(full.headers['retry-after']).toBe('1');
      // A retry of a queued job is answered by its record, even with the queue full.
      const again = await submit(0);
      expect(again.status).toBe(202);
      expect(again.json.result.data.operationId).toBe(ids[0]);

      // Cancelled while queued: it will never start.
      const cancelled = await post(
        server.url,
        'jobs.cancel',
        { operationId: ids[3] },
        { account: acct },
      );
      expect(cancelled.json.result.data).toBe('cancelled');

      // The status, scoped to the caller: another caller learns nothing from a real id.
      const mine = await statusOf(server.url, ids[1]!, acct);
      expect(JSON.parse(mine.text).result.data).toMatchObject({ state: 'PENDING' });
      const theirs = await statusOf(server.url, ids[1]!, account());
      const random = await statusOf(server.url, randomUUID(), account());
      expect(theirs.status).toBe(404);
      expect(theirs.text).toBe(random.text);

      const pool = app.idem.workerPool({
        router: app.router,
        createContext: (record) => ({ account: record.scope }),
        concurrency: 2,
        pollMs: 20,
      });
      try {
        await expect.poll(() => app.stats.running).toBe(2);
        await env.db.execute(openQueueGate);
        await expect.poll(() => app.stats.runs).toBe(3);
        // The refused request, retried with its key once there is room, runs too.
        const retried = await submit(4);
        expect(retried.status).toBe(202);
        await expect.poll(() => app.stats.runs).toBe(4);
      } finally {
        await pool.stop();
      }
      expect(app.stats).toMatchObject({ maxRunning: 2, duplicates: 0, running: 0 });
      expect(await env.count(sql`select 1 from test_queue_runs`)).toBe(4);
      expect(
        await env.count(sql`select 1 from test_queue_runs where operation_id = ${ids[3]!}`),
      ).toBe(0);
      const done = JSON.parse((await statusOf(server.url, ids[0]!, acct)).text).result.data;
      expect(done).toMatchObject({ state: 'COMPLETED', result: { n: 0, by: 'one' } });
      const gone = JSON.parse((await statusOf(server.url, ids[3]!, acct)).text).result.data;
      expect(gone).toMatchObject({ state: 'TERMINAL_FAILURE' });
    });
  });
}
