/**
 * The example's gate for external calls under takeover, on PostgreSQL with real processes: the
 * stand-in processor in `lookup-only` mode (it does not de-duplicate on the operation id, so a
 * second call is a second charge), about 1 s of processor latency, two server processes on one
 * database, 20 payments in flight, `kill -9` of one process while its charges are in flight, its
 * restart on the same port, client retries with the same keys, and the completers of both
 * processes. In every run, the processor's own ledger shows at most one charge call per operation
 * id, and every payment is paid by exactly one charge.
 */
import { withIdempotencyKey } from '@idem/client';
import { createTestDatabase, postgresAvailable } from '@idem/fixtures';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { exampleClient } from './fixtures/exampleClient.js';
import { startExampleServer, type ExampleServer } from './fixtures/exampleServer.js';

const available = await postgresAvailable();

const RUNS = 5;
const PAYMENTS = 20;
const env = (url: string, port = '0') => ({
  DATABASE_URL: url,
  PORT: port,
  IDEM_EXAMPLE_PROCESSOR: 'lookup-only',
  IDEM_EXAMPLE_PROCESSOR_LATENCY_MS: '1000',
  // The example's default 3 s lease: the charge's time limit is 1.5 s, and a charge in flight
  // when its process died is looked up no earlier than 6 s after it began.
});

/** Polls `check` every 50 ms until it holds, for at most `ms` (a bounded wait, then a failure). */
async function until(check: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe.skipIf(!available)(
  'lookup-only processor, two processes, kill -9 mid-charge (PostgreSQL)',
  () => {
    it.each(Array.from({ length: RUNS }, (_, i) => i + 1))(
      'run %i: at most one charge call per operation id, every payment charged once',
      async (run) => {
        await using database = await createTestDatabase('idem_gate');
        const db = postgres(database.url, { max: 2, onnotice: () => {} });
        const servers: ExampleServer[] = [];
        try {
          // One after the other: each applies the migrations at start.
          const victim = await startExampleServer(env(database.url));
          servers.push(victim);
          const survivor = await startExampleServer(env(database.url));
          servers.push(survivor);
          const account = `acct_gate${run}`;
          const setup = exampleClient(survivor.url, account);
          const orders = [];
          for (let i = 0; i < PAYMENTS; i++) {
            orders.push(await setup.orders.create.mutate({ sku: `sku${i}`, quantity: 1 }));
          }
          const onVictim = new Set(orders.filter((_, i) => i % 2 === 0).map((order) => order.id));

          // 20 payments, sent 60 ms apart so that all overlap (each charge takes 1 s) and the kill
          // finds the victim's charges at different points: received, on the way, not sent yet.
          // Half go through each process; each client retries with its own key.
          const payments = orders.map(async (order, i) => {
            await new Promise((resolve) => setTimeout(resolve, i * 60));
            const server = i % 2 === 0 ? victim : survivor;
            const client = exampleClient(server.url, account, {
              maxAttempts: 60,
              backoff: () => 400,
              deadlineMs: 80_000,
            });
            const input = { orderId: order.id, amountCents: 100 + i, currency: 'EUR' } as const;
            return client.payments.create.mutate(
              input,
              withIdempotencyKey(`gate-${run}-${order.id}`),
            );
          });
          for (const payment of payments) payment.catch(() => undefined);

          // Kill the victim once the processor has received one of its charges: the others are
          // in flight (on their way there or back).
          const victimOrders = [...onVictim];
          await until(
            async () => {
              const [row] = await db<{ n: number }[]>`
                select count(*)::int as n from processor_calls c
                join payments p on p.operation_id = c.operation_id
                where c.kind = 'charge' and p.order_id = any(${victimOrders}::text[])`;
              return row!.n > 0;
            },
            20_000,
            "the victim's first charge",
          );
          victim.process.child.kill('SIGKILL');
          expect(await victim.process.exited).toEqual({ code: null, signal: 'SIGKILL' });
          const port = new URL(victim.url).port;
          servers.push(await startExampleServer(env(database.url, port)));

          const paid = await Promise.all(payments);
          expect(paid.map((p) => p.status)).toEqual(orders.map(() => 'paid'));

          const doubleCalls = await db`
            select operation_id, count(*)::int as n from processor_calls
            where kind = 'charge' group by operation_id having count(*) > 1`;
          expect(doubleCalls).toEqual([]);
          const [charges] = await db<{ n: number }[]>`
            select count(*)::int as n from processor_charges`;
          expect(charges!.n).toBe(PAYMENTS);
          // Each payment is paid by the one charge of its own operation id.
          const [matched] = await db<{ n: number }[]>`
            select count(*)::int as n from payments p
            join processor_charges c on c.id = p.charge_id and c.operation_id = p.operation_id
            where p.status = 'paid'`;
          expect(matched!.n).toBe(PAYMENTS);
          const [lookups] = await db<{ n: number }[]>`
            select count(*)::int as n from processor_calls where kind = 'lookup'`;
          // The killed process had recorded charge intents: resuming them asked the processor.
          expect(lookups!.n).toBeGreaterThan(0);
          const [calls] = await db<{ n: number }[]>`
            select count(*)::int as n from processor_calls where kind = 'charge'`;
          const [afterLookup] = await db<{ n: number }[]>`
            select count(distinct l.operation_id)::int as n from processor_calls l
            join processor_calls c on c.operation_id = l.operation_id and c.kind = 'charge'
            where l.kind = 'lookup' and c.id > l.id`;
          console.info(
            `takeover gate run ${run}: ${PAYMENTS} payments paid, ${calls!.n} charge calls, ` +
              `${charges!.n} charges, ${lookups!.n} lookups (${afterLookup!.n} answered ` +
              `"not found", then charged once), 0 operations called twice`,
          );
        } finally {
          for (const server of servers.reverse()) await server[Symbol.asyncDispose]();
          await db.end({ timeout: 1 });
        }
      },
    );
  },
);
