import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { pgliteEnv } from './fixtures/databases.js';
import { post, serve } from './fixtures/httpHarness.js';
import { createTestApp } from './fixtures/testApp.js';
import { describeMetricsGates } from './metricsGates.js';
import { describeOperationGates } from './operationGates.js';
import { describeRecoveryGates } from './recoveryGates.js';
import { describeServerGates } from './serverGates.js';
import { describeQueueGates } from './queueGates.js';
import { itProducedEveryReason } from './fixtures/reasonLedger.js';

describe('PGlite', () => {
  describeServerGates('PGlite', () => pgliteEnv());
  describeRecoveryGates('PGlite', () => pgliteEnv());
  describeOperationGates('PGlite', () => pgliteEnv());
  describeMetricsGates('PGlite', () => pgliteEnv());
  describeQueueGates('PGlite', () => pgliteEnv());

  it('runs 50 concurrent identical requests once (PGlite serialises transactions)', async () => {
    await using env = await pgliteEnv();
    const app = createTestApp(env.store, { workMs: 20 });
    await using server = await serve(app.router);
    const acct = `acct_${randomUUID().replaceAll('-', '')}`;
    const responses = await Promise.all(
      Array.from({ length: 50 }, () =>
        post(
          server.url,
          'orders.create',
          { sku: 'x', quantity: 1 },
          { key: 'storm', account: acct },
        ),
      ),
    );
    expect(responses.filter((r) => r.status >= 500)).toEqual([]);
    const executed = responses.filter((r) => r.status === 200 && !r.headers['idempotent-replayed']);
    expect(executed).toHaveLength(1);
    expect(responses.filter((r) => r.status === 200 || r.status === 409)).toHaveLength(50);
    expect(app.counter.calls['orders.create']).toBe(1);
    expect(await env.count(sql`select 1 from test_orders where scope = ${acct}`)).toBe(1);
  });

  // Last: every reason above, checked against the contract's table.
  itProducedEveryReason();
});
