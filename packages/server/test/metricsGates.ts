import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { createReaper, SERVER_METRICS } from '../src/index.js';
import type { TestEnv } from './fixtures/databases.js';
import { post, serve } from './fixtures/httpHarness.js';
import { createTestApp } from './fixtures/testApp.js';
import { testMeter } from '@idem/fixtures';

/** The metrics match what happened; once per database. */
export function describeMetricsGates(name: string, makeEnv: () => Promise<TestEnv>): void {
  describe(`metrics on ${name}`, () => {
    it('50 concurrent identical requests (key taken at commit) count 1 completed execution; every other run rolled back, answered by a replay or an in-progress conflict', async () => {
      await using env = await makeEnv();
      const metrics = testMeter();
      const app = createTestApp(env.store, { workMs: 30, meter: metrics.meter });
      await using server = await serve(app.router);
      const account = `acct_${randomUUID().replaceAll('-', '')}`;
      const responses = await Promise.all(
        Array.from({ length: 50 }, () =>
          post(server.url, 'orders.create', { sku: 'm', quantity: 1 }, { key: 'metric', account }),
        ),
      );
      const conflicts = responses.filter((r) => r.status === 409).length;
      const replays = responses.filter((r) => r.headers['idempotent-replayed'] === 'true').length;
      const executed = responses.filter(
        (r) => r.status === 200 && r.headers['idempotent-replayed'] === undefined,
      );
      expect(executed).toHaveLength(1);
      expect(replays + conflicts).toBe(49);
      expect(await metrics.sum(SERVER_METRICS.replays)).toBe(replays);
      expect(
        await metrics.sum(SERVER_METRICS.rejections, {
          'idem.reason': 'IDEMPOTENCY_REQUEST_IN_PROGRESS',
        }),
      ).toBe(conflicts);
      // Every handler run is accounted for: the one that committed, and those rolled back.
      const handlerCalls = app.counter.calls['orders.create']!;
      const completed = await metrics.sum(SERVER_METRICS.executions, {
        'idem.outcome': 'completed',
      });
      const rolledBack = await metrics.sum(SERVER_METRICS.executions, {
        'idem.outcome': 'rolled-back',
      });
      expect(completed).toBe(1);
      expect(completed + rolledBack).toBe(handlerCalls);
      expect(await metrics.sum(SERVER_METRICS.executions)).toBe(handlerCalls);
      expect(await env.count(sql`select 1 from test_orders where scope = ${account}`)).toBe(1);
      // One read of the key per request, and one more for each run that lost to the committed
      // record (it reads the winner's); a lock wait that ran out (409) reads nothing more.
      expect(await metrics.count(SERVER_METRICS.claimDuration)).toBe(50 + rolledBack - conflicts);
      expect(await metrics.count(SERVER_METRICS.requestDuration)).toBe(50);

      const reused = await post(
        server.url,
        'orders.create',
        { sku: 'other', quantity: 1 },
        { key: 'metric', account },
      );
      expect(reused.status).toBe(422);
      expect(
        await metrics.sum(SERVER_METRICS.rejections, { 'idem.reason': 'IDEMPOTENCY_KEY_REUSED' }),
      ).toBe(1);
    });

    it('50 concurrent identical requests (claim first) count 1 execution and 49 replays or in-progress conflicts', async () => {
      await using env = await makeEnv();
      const metrics = testMeter();
      const app = createTestApp(env.store, { workMs: 30, meter: metrics.meter, claim: 'first' });
      await using server = await serve(app.router);
      const account = `acct_${randomUUID().replaceAll('-', '')}`;
      const responses = await Promise.all(
        Array.from({ length: 50 }, () =>
          post(server.url, 'orders.create', { sku: 'm', quantity: 1 }, { key: 'metric', account }),
        ),
      );
      const conflicts = responses.filter((r) => r.status === 409).length;
      expect(app.counter.calls['orders.create']).toBe(1);
      expect(await metrics.sum(SERVER_METRICS.executions, { 'idem.outcome': 'completed' })).toBe(1);
      expect(await metrics.sum(SERVER_METRICS.executions)).toBe(1);
      expect(await metrics.sum(SERVER_METRICS.replays)).toBe(49 - conflicts);
      expect(
        await metrics.sum(SERVER_METRICS.rejections, {
          'idem.reason': 'IDEMPOTENCY_REQUEST_IN_PROGRESS',
        }),
      ).toBe(conflicts);
      expect(await metrics.count(SERVER_METRICS.claimDuration)).toBe(50);
      expect(await metrics.count(SERVER_METRICS.requestDuration)).toBe(50);
    });

    it('the reaper reports deleted rows and stuck records', async () => {
      await using env = await makeEnv();
      const metrics = testMeter();
      const app = createTestApp(env.store);
      await using server = await serve(app.router);
      await post(
        server.url,
        'orders.create',
        { sku: 'r', quantity: 1 },
        { key: 'reap-me', account: 'acct_reap' },
      );
      const reaper = createReaper({
        store: env.storeAt(100 * 3600_000),
        meter: metrics.meter,
      });
      expect((await reaper.runOnce()).deleted).toBe(1);
      expect(await metrics.sum(SERVER_METRICS.reapedRows)).toBe(1);
    });
  });
}
