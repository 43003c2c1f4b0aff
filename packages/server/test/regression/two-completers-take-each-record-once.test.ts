/**
 * Two completers in two processes over 50 abandoned records (PostgreSQL): every record is taken
 * once and finished once, and every charge call is made under a live lease of the worker making
 * it, checked by the fake processor against the database at the moment of the call.
 *
 * The completers' own lease is short (500 ms) next to the work of a batch (10 records of 100 ms
 * charges each): a completer that took its whole batch at once would work on records whose lease
 * it lost, and the other completer would take them too.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { postgresAvailable } from '@idem/fixtures';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { CompleterReport } from '../../src/index.js';
import { postgresEnv } from '../fixtures/databases.js';
import { post, serve } from '../fixtures/httpHarness.js';
import { createPaymentsApp } from '../fixtures/paymentsApp.js';
import { Gate } from '../fixtures/testApp.js';

const available = await postgresAvailable();
const entry = fileURLToPath(new URL('../fixtures/completerProcess.ts', import.meta.url));
const RECORDS = 50;
/** The abandoning workers held 10 s leases; the completers' clock is past them. */
const AFTER_LEASE = 11_000;
const account = 'acct_completers';

/** Starts a completer process and waits until it is ready; `go()` starts it, `report` ends. */
async function completerProcess(env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', entry], {
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! });
  let ready!: () => void;
  let reported!: (report: CompleterReport) => void;
  const isReady = new Promise<void>((resolve) => (ready = resolve));
  const report = new Promise<CompleterReport>((resolve) => (reported = resolve));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  lines.on('line', (line) => {
    if (line === 'ready') ready();
    const match = /^report (.*)$/.exec(line);
    if (match) reported(JSON.parse(match[1]!) as CompleterReport);
  });
  await Promise.race([
    isReady,
    exited.then((code) => Promise.reject(new Error(`completer exited early with ${code}`))),
  ]);
  return { child, report, exited, go: () => child.stdin!.write('go\n') };
}

describe.skipIf(!available)('two completers in two processes over 50 abandoned records', () => {
  it('each record is taken once and finished once, every call under a live lease', async () => {
    await using env = await postgresEnv();
    // 50 payments whose workers stall before the charge (the reserve phase committed) and stay
    // stalled: abandoned records once their 10 s lease has run out.
    const gate = new Gate();
    const app = createPaymentsApp(env.db, env.store, {
      leaseMs: 10_000,
      beforeCharge: () => gate.opened,
    });
    await using server = await serve(app.router);
    const stalled = Array.from({ length: RECORDS }, (_, i) =>
      post(server.url, 'pay', { amount: 100 + i }, { key: `k-${i}`, account }),
    );
    try {
      await expect
        .poll(() => env.count(sql`select 1 from test_payments`), { timeout: 20_000 })
        .toBe(RECORDS);

      const processEnv = (owner: string) => ({
        DATABASE_URL: env.url!,
        SHIFT_CLOCK_MS: String(AFTER_LEASE),
        OWNER: owner,
        PROCESSOR_LATENCY_MS: '100',
        COMPLETER_LEASE_MS: '500',
      });
      const [a, b] = await Promise.all([
        completerProcess(processEnv('completer-a')),
        completerProcess(processEnv('completer-b')),
      ]);
      a.go();
      b.go();
      const reports = await Promise.all([a.report, b.report]);
      expect(await Promise.all([a.exited, b.exited])).toEqual([0, 0]);
      const total = (key: keyof CompleterReport) => reports[0]![key] + reports[1]![key];
      expect({
        taken: total('taken'),
        finished: total('finished'),
        failed: total('failed'),
        handedToOperators: total('handedToOperators'),
      }).toEqual({ taken: RECORDS, finished: RECORDS, failed: 0, handedToOperators: 0 });

      // The processor's ledger: one charge call per operation, each under its caller's live lease.
      const calls = (await env.db.execute(sql`
        select operation_id, count(*)::int as n, bool_and(live) as live
        from test_processor_calls where kind = 'charge' group by operation_id`)) as unknown as {
        n: number;
        live: boolean;
      }[];
      expect(calls).toHaveLength(RECORDS);
      expect(calls.filter((c) => c.n !== 1 || !c.live)).toEqual([]);
      const records = (await env.db.execute(sql`
        select state, takeovers, count(*)::int as n from idem_records
        group by state, takeovers`)) as unknown as Record<string, unknown>[];
      expect(records).toEqual([{ state: 'COMPLETED', takeovers: 1, n: RECORDS }]);

      // The stalled workers wake to records they no longer own: no call, no write.
      gate.open();
      const late = await Promise.all(stalled);
      expect(late.map((r) => r.status)).toEqual(stalled.map(() => 409));
      expect(await env.count(sql`select 1 from test_processor_calls where kind = 'charge'`)).toBe(
        RECORDS,
      );
      expect(await env.count(sql`select 1 from test_payments where state = 'paid'`)).toBe(RECORDS);
    } finally {
      gate.open();
      await Promise.allSettled(stalled);
    }
  });
});
