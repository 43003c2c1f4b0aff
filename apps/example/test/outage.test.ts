/**
 * The example through database outages: a private PostgreSQL cluster, the example server as a
 * child process on it, 20 clients with keyed orders and payments, and 10 rounds of
 * `pg_ctl stop -m immediate` (every backend killed at once) and restart. The process never
 * exits; every answer is a success, or a 503 IDEMPOTENCY_STORE_UNAVAILABLE with Retry-After
 * (or a payment's documented retryable answers: 409 IDEMPOTENCY_REQUEST_IN_PROGRESS while its
 * lease is held, 503 when its charge's outcome must be looked up, with or without the reason
 * IDEMPOTENCY_OUTCOME_LOOKUP_PENDING), within the bound; afterwards every key settled once: one order and one payment per key, one
 * charge per payment, and every key replays the result first acknowledged for it.
 *
 * On both drivers (IDEM_EXAMPLE_DATABASE_DRIVER): postgres.js and pg. Without the postgres.js
 * patch (patches/postgres@3.4.9.patch) the server died here with an uncaught TypeError in
 * `nextWrite` within the first rounds.
 */
import {
  createPrivateCluster,
  createTestDatabase,
  postgresAvailable,
  privateClustersAvailable,
  type PrivateCluster,
} from '@idem/fixtures';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql as sqlText } from 'drizzle-orm';
import { openDatabase } from '../src/openDatabase.js';
import { DATABASE_DRIVERS } from '../src/readConfig.js';
import { startExampleServer } from './fixtures/exampleServer.js';
import { keyedHeaders, keyedTraffic, type Answer } from './fixtures/keyedTraffic.js';
import { httpPost } from '@idem/fixtures';

const available = (await postgresAvailable()) && privateClustersAvailable();

const ROUNDS = 10;
const CLIENTS = 20;
/** IDEM_EXAMPLE_DATABASE_CONNECT_TIMEOUT_MS for the server under test. */
const CONNECT_TIMEOUT_MS = 1_000;
/** The longest any answer may take: the connect timeout plus room for a loaded 2-core machine. */
const BOUND_MS = 3 * CONNECT_TIMEOUT_MS;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.skipIf(!available).each(DATABASE_DRIVERS)(
  'a database outage, 10 times over (%s)',
  (driver) => {
    let cluster: PrivateCluster;
    beforeAll(async () => {
      cluster = await createPrivateCluster();
      const admin = postgres(cluster.url(), { max: 1, onnotice: () => {} });
      await admin`create database idem_outage`;
      await admin.end();
    });
    afterAll(async () => {
      await cluster?.destroy();
    });

    it('the server survives, answers 503 within the bound, and every key settles once', async () => {
      await using server = await startExampleServer({
        DATABASE_URL: cluster.url('idem_outage'),
        IDEM_EXAMPLE_DATABASE_DRIVER: driver,
        IDEM_EXAMPLE_DATABASE_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
        IDEM_EXAMPLE_PROCESSOR_LATENCY_MS: '20',
        IDEM_EXAMPLE_LEASE_MS: '1000',
      });
      expect(server.records.find((r) => r.msg === 'database.driver')?.driver).toBe(driver);
      let exited = false;
      void server.process.exited.then(() => (exited = true));

      const traffic = keyedTraffic({ url: () => server.url, clients: CLIENTS, prefix: 'outage' });
      const outages: { from: number; to: number }[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        await sleep(700);
        const from = traffic.answers.length;
        await cluster.crash();
        await sleep(800);
        await cluster.start();
        outages.push({ from, to: traffic.answers.length });
        expect(exited, `the server exited in round ${round + 1}`).toBe(false);
      }
      await sleep(700);
      await traffic.stop();
      expect(exited).toBe(false);

      // Every answer: a success, or a documented retryable answer with Retry-After, in the bound.
      const unexpected = traffic.answers.filter((a) => !acceptable(a));
      expect(unexpected.slice(0, 5)).toEqual([]);
      const slowest = Math.max(...traffic.answers.map((a) => a.ms));
      expect(slowest).toBeLessThanOrEqual(BOUND_MS);
      // The outages were seen: each round answered some requests 503.
      const unavailable = traffic.answers.filter((a) => a.status === 503);
      for (const { from, to } of outages) {
        expect(traffic.answers.slice(from, to).some((a) => a.status === 503)).toBe(true);
      }

      // Every key settled once: the database holds one order and one payment per key, and one
      // charge per payment; each key replays what was first acknowledged for it.
      const sql = postgres(cluster.url('idem_outage'), { max: 1, onnotice: () => {} });
      try {
        let keys = 0;
        for (const client of traffic.settled) {
          expect(client.refused).toEqual(new Map());
          keys += client.orders.size;
          const [counts] = await sql<{ orders: number; payments: number; charges: number }[]>`
          select (select count(*)::int from orders where account_id = ${client.account}) as orders,
                 (select count(*)::int from payments where account_id = ${client.account}) as payments,
                 (select count(*)::int from processor_charges where account_id = ${client.account}) as charges`;
          expect(counts).toEqual({
            orders: client.orders.size,
            payments: client.payments.size,
            charges: client.payments.size,
          });
        }
        for (const client of traffic.settled.slice(0, 3)) {
          for (const [key, id] of [...client.orders].slice(-5)) {
            const replay = await httpPost(
              `${server.url}/orders.create`,
              JSON.stringify({ sku: 'tea', quantity: 1 }),
              keyedHeaders(client.account, key),
            );
            expect(replay.status).toBe(200);
            expect(replay.headers['idempotent-replayed']).toBe('true');
            expect(replay.json.result.data.id).toBe(id);
          }
        }
        console.log(
          `outage (${driver}): ${ROUNDS} rounds, ${CLIENTS} clients, ${keys} orders and as many payments; ` +
            `${traffic.answers.length} answers, ${unavailable.length} of them 503, ` +
            `${traffic.answers.filter((a) => a.status === 409).length} 409; slowest ${Math.round(slowest)} ms`,
          tally(traffic.answers),
        );
      } finally {
        await sql.end();
      }
    });
  },
);

describe.skipIf(!(await postgresAvailable()))('a transaction whose BEGIN fails (pg)', () => {
  it('gives its client back to the pool: the pool of 10 serves after 12 of them', async () => {
    // A BEGIN refused by the server stands for one cut under it (the database went away between
    // the checkout and the BEGIN): Drizzle's node-postgres `db.transaction` keeps that client.
    await using database = await createTestDatabase('idem_example_begin');
    const opened = await openDatabase({
      databaseUrl: database.url,
      dataDir: 'memory://',
      databaseDriver: 'pg',
      databasePooler: 'none',
      databaseConnectTimeoutMs: 500,
    });
    try {
      expect(opened.driver).toBe('pg');
      const refused = { isolationLevel: 'no such level' as 'serializable' };
      for (let i = 0; i < 12; i++) {
        await expect(opened.db.transaction(async () => {}, refused)).rejects.toThrow();
      }
      // Without the release, the 11th checkout waited out the connect timeout and failed.
      const ran = await opened.db.transaction(async (tx) => {
        await tx.execute(sqlText`select 1`);
        return 'ran';
      });
      expect(ran).toBe('ran');
    } finally {
      // Without the release this hangs too: the pool's end waits for the clients it lent.
      await opened.close();
    }
  }, 20_000);
});

function acceptable(answer: Answer): boolean {
  if (answer.status === 200) return true;
  if (answer.status === 503) {
    // The store was unreachable; or the stand-in processor (on the same database) failed
    // mid-charge, so the charge's outcome is looked up on the retry: a plain retryable 503
    // (docs/server.md), whatever its message says; or the charge outlived its time limit while
    // the database was away (docs/contract.md: 503 IDEMPOTENCY_OUTCOME_LOOKUP_PENDING, retried
    // with the same key, nothing ran twice). The counts below check that nothing did.
    return (
      (answer.reason === 'IDEMPOTENCY_STORE_UNAVAILABLE' && answer.retryAfter !== undefined) ||
      (answer.procedure === 'payments.create' && answer.reason === undefined) ||
      (answer.procedure === 'payments.create' &&
        answer.reason === 'IDEMPOTENCY_OUTCOME_LOOKUP_PENDING' &&
        answer.retryAfter !== undefined)
    );
  }
  if (answer.status === 409) {
    return answer.reason === 'IDEMPOTENCY_REQUEST_IN_PROGRESS' && answer.retryAfter !== undefined;
  }
  return false;
}

/** Answers counted by procedure, status and reason: the test's report. */
function tally(answers: Answer[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const a of answers) {
    const name = `${a.procedure} ${a.status}${a.reason ? ` ${a.reason}` : ''}`;
    counts[name] = (counts[name] ?? 0) + 1;
  }
  return counts;
}
