import { postgresAvailable } from '@idem/fixtures';
import { createPostgresJsStore } from '@idem/store-drizzle/postgres-js';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { postgresEnv, type TestEnv } from './fixtures/databases.js';
import { post } from './fixtures/httpHarness.js';
import { createPaymentsApp, processorCounts, type PaymentFault } from './fixtures/paymentsApp.js';
import { spawnServer } from './fixtures/spawnServer.js';

const available = await postgresAvailable();
const entry = new URL('./fixtures/paymentsProcess.ts', import.meta.url);
/**
 * The crashed process held a 10 s lease, extended to 15 s by the charge's intent (time limit 5 s,
 * half the lease), and no takeover before 5 s after that (20 s): the next one's clock is past it.
 */
const AFTER_LEASE = '25000';
const account = 'acct_crash';

const paymentsDatabase = () => postgresEnv();

/** Sends the first payment to a process that SIGKILLs itself at `at`, and checks it died. */
async function crashAt(env: TestEnv, at: PaymentFault) {
  await using doomed = await spawnServer(entry, { DATABASE_URL: env.url!, FAULT_AT: at });
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    doomed.child.once('exit', (_code, signal) => resolve(signal)),
  );
  await expect(
    post(doomed.url, 'pay', { amount: 500 }, { key: 'pay-1', account }),
  ).rejects.toThrow();
  expect(await exited).toBe('SIGKILL');
}

const crashPoints: [PaymentFault, { lookups: number }][] = [
  ['before-claim', { lookups: 0 }],
  ['after-claim', { lookups: 0 }],
  ['between-phases', { lookups: 0 }],
  ['after-charge-before-record', { lookups: 1 }],
  ['after-complete-before-response', { lookups: 0 }],
];

describe.skipIf(!available)(
  'crash recovery: a real process killed with SIGKILL at each boundary',
  () => {
    it.each(crashPoints)(
      '%s: a retry with the same key finishes with one charge call',
      async (at, expected) => {
        await using env = await paymentsDatabase();
        await crashAt(env, at);
        await using next = await spawnServer(entry, {
          DATABASE_URL: env.url!,
          SHIFT_CLOCK_MS: AFTER_LEASE,
        });
        const retry = await post(next.url, 'pay', { amount: 500 }, { key: 'pay-1', account });
        expect(retry.status).toBe(200);
        expect(retry.json.result.data).toMatchObject({
          amount: 500,
          chargeId: expect.stringMatching(/^ch_/),
        });
        const again = await post(next.url, 'pay', { amount: 500 }, { key: 'pay-1', account });
        expect(again.headers['idempotent-replayed']).toBe('true');
        expect(again.text).toBe(retry.text);
        expect(await processorCounts(env.count)).toEqual({
          charges: 1,
          chargeCalls: 1,
          lookups: expected.lookups,
          paid: 1,
          payments: 1,
        });
      },
    );

    it.each(crashPoints)(
      '%s: the completer finishes the work without the client',
      async (at, expected) => {
        await using env = await paymentsDatabase();
        await crashAt(env, at);
        const client = postgres(env.url!, { max: 5, onnotice: () => {} });
        try {
          const db = drizzle(client);
          const store = createPostgresJsStore(db, { dangerouslyShiftClockMs: Number(AFTER_LEASE) });
          const app = createPaymentsApp(db, store);
          const completer = app.idem.completer({
            router: app.router,
            createContext: (record) => ({ account: record.scope }),
          });
          const report = await completer.runOnce();
          const abandoned =
            at === 'before-claim' || at === 'after-complete-before-response' ? 0 : 1;
          expect(report).toEqual({
            taken: abandoned,
            finished: abandoned,
            failed: 0,
            handedToOperators: 0,
          });
          // Then the client's retry gets the stored result (or, with nothing claimed, runs it once).
          await using next = await spawnServer(entry, { DATABASE_URL: env.url! });
          const retry = await post(next.url, 'pay', { amount: 500 }, { key: 'pay-1', account });
          expect(retry.status).toBe(200);
          if (at !== 'before-claim') expect(retry.headers['idempotent-replayed']).toBe('true');
          expect(await processorCounts(env.count)).toEqual({
            charges: 1,
            chargeCalls: 1,
            lookups: expected.lookups,
            paid: 1,
            payments: 1,
          });
        } finally {
          await client.end({ timeout: 1 });
        }
      },
    );
  },
);
