/**
 * The example's end-to-end gate on PostgreSQL: a real server process is killed with SIGKILL at
 * each crash point of `payments.create`; a new process on the same database and a client built on
 * `@idem/client`, retrying with the same key, finish the payment. The stand-in processor's own
 * counts prove one charge.
 */
import { withIdempotencyKey } from '@idem/client';
import { createTestDatabase, postgresAvailable } from '@idem/fixtures';
import { describe, expect, it } from 'vitest';
import { CRASH_POINTS, type CrashPoint } from '../src/Faults.js';
import { exampleClient } from './fixtures/exampleClient.js';
import { startExampleServer } from './fixtures/exampleServer.js';

const available = await postgresAvailable();

/** Lookups the resumed payment makes: only a crash between the call and its record needs one. */
const expectedLookups: Record<CrashPoint, number> = {
  'after-claim': 0,
  'after-charge-before-record': 1,
  'before-commit': 0,
  'after-commit-before-response': 0,
};

describe.skipIf(!available)('payments.create survives a crash at every point (PostgreSQL)', () => {
  it.each(CRASH_POINTS)('%s: one order, one payment, one charge', async (point) => {
    await using database = await createTestDatabase('idem_example');
    const account = `acct_crash${point.replaceAll('-', '')}`;
    const key = withIdempotencyKey(`payment-${point}`);

    await using doomed = await startExampleServer({
      DATABASE_URL: database.url,
      IDEM_EXAMPLE_CRASH_AT: point,
    });
    const first = exampleClient(doomed.url, account, { maxAttempts: 1 });
    const order = await first.orders.create.mutate({ sku: 'tea', quantity: 1 });
    const input = { orderId: order.id, amountCents: 1250, currency: 'EUR' } as const;
    await expect(first.payments.create.mutate(input, key)).rejects.toThrow();
    expect(await doomed.process.exited).toEqual({ code: null, signal: 'SIGKILL' });
    expect(doomed.records.filter((r) => r.msg === 'fault.crash')).toMatchObject([{ point }]);

    // A new process on the same database; the caller retries with the same key.
    await using next = await startExampleServer({ DATABASE_URL: database.url });
    const retrying = exampleClient(next.url, account, { maxAttempts: 20, backoff: () => 250 });
    const paid = await retrying.payments.create.mutate(input, key);
    expect(paid).toMatchObject({
      orderId: order.id,
      status: 'paid',
      chargeId: expect.stringMatching(/^ch_/),
    });
    expect(await retrying.payments.create.mutate(input, key)).toEqual(paid);

    expect(await retrying.processor.stats.query()).toEqual({
      charges: 1,
      chargeCalls: 1,
      lookupCalls: expectedLookups[point],
    });
    expect(await retrying.orders.list.query()).toHaveLength(1);
    expect(await retrying.payments.list.query()).toEqual([paid]);
  });
});
