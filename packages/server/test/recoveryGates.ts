import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { DEFAULT_REPLAY_WINDOW_MS, DEFAULT_RETENTION_MS, type RecoveryStore } from '@idem/contract';
import { testMeter } from '@idem/fixtures';
import { createReaper, SERVER_METRICS } from '../src/index.js';
import { checkResolution, hashIdempotencyKey } from '../src/operator.js';
import type { TestEnv } from './fixtures/databases.js';
import { post, serve } from './fixtures/httpHarness.js';
import {
  createPaymentsApp,
  processorCounts,
  type PaymentsAppOptions,
} from './fixtures/paymentsApp.js';
import { Gate, TEST_KEY_SECRET } from './fixtures/testApp.js';

const LEASE = 10_000;
/**
 * When an external call begun now can no longer be in flight: the intent's lease (the call's time
 * limit, half the lease by default, plus a lease) plus the time limit again. No takeover before.
 */
const CALL_SETTLED = LEASE / 2 + LEASE + LEASE / 2;
const acct = 'acct_recovery';
const pay = { amount: 700 };

/** A payments app served over HTTP on `store`. Dispose to close. */
async function paymentsServer(
  env: TestEnv,
  store: RecoveryStore<any>,
  options: PaymentsAppOptions = {},
) {
  const app = createPaymentsApp(env.db, store, { leaseMs: LEASE, ...options });
  const server = await serve(app.router);
  return Object.assign(server, {
    app,
    call: (path: string, input: unknown, key: string) =>
      post(server.url, path, input, { key, account: acct }),
  });
}

/** Recovery gates with controlled database time (no sleeps); run once per database. */
export function describeRecoveryGates(name: string, makeEnv: () => Promise<TestEnv>): void {
  describe(`recovery gates on ${name}`, () => {
    it('takes over an expired lease; the stale worker wakes late, writes nothing, and its result is discarded', async () => {
      await using env = await makeEnv();
      const gate = new Gate();
      await using stale = await paymentsServer(env, env.store, {
        beforeCharge: () => gate.opened,
      });
      await using later = await paymentsServer(env, env.storeAt(LEASE + 1_000));
      const first = stale.call('pay', pay, 'k-lease');
      await expect.poll(() => env.count(sql`select 1 from test_payments`)).toBe(1); // reserve committed
      // Before the lease ends, a duplicate is told to wait.
      expect((await stale.call('pay', pay, 'k-lease')).status).toBe(409);
      const takeover = await later.call('pay', pay, 'k-lease');
      expect(takeover.status).toBe(200);
      gate.open();
      const late = await first;
      expect(late.status).toBe(409);
      expect(late.json.error.data.idem.reason).toBe('IDEMPOTENCY_REQUEST_IN_PROGRESS');
      const replay = await later.call('pay', pay, 'k-lease');
      expect(replay.text).toBe(takeover.text);
      expect(await processorCounts(env.count)).toEqual({
        charges: 1,
        chargeCalls: 1,
        lookups: 0,
        paid: 1,
        payments: 1,
      });
      const [record] = await env.db
        .execute(sql`select version, attempts from idem_records where scope = ${acct}`)
        .then(rowsOf);
      expect(record).toEqual({ version: 2, attempts: 2 });
    });

    it('a stale worker, taken over while it waited between a lookup and its call, makes no call', async () => {
      await using env = await makeEnv();
      // A charge that failed before it was sent: its intent is recorded, its outcome unknown.
      await using first = await paymentsServer(env, env.store, {
        fault: { at: 'charge-fails-before-send', how: 'throw' },
      });
      expect((await first.call('pay', pay, 'k-stale')).status).toBe(503);
      // W takes over once that call is settled; its lookup answers "not found"; then W stalls.
      const gate = new Gate();
      const wAt = CALL_SETTLED + 1_000;
      await using stale = await paymentsServer(env, env.storeAt(wAt), {
        afterLookup: () => gate.opened,
      });
      const staleCall = stale.call('pay', pay, 'k-stale');
      await expect
        .poll(() => env.count(sql`select 1 from test_processor_calls where kind = 'lookup'`))
        .toBe(1);
      // W's lease ran out (W wrote nothing since its takeover): N takes over, looks up, calls.
      await using later = await paymentsServer(env, env.storeAt(wAt + LEASE + 1_000));
      const taken = await later.call('pay', pay, 'k-stale');
      expect(taken.status).toBe(200);
      // W wakes: the fenced intent before its call matches no row, so it never calls.
      gate.open();
      const late = await staleCall;
      expect(late.status).toBe(409);
      expect(late.json.error.data.idem.reason).toBe('IDEMPOTENCY_REQUEST_IN_PROGRESS');
      expect(await processorCounts(env.count)).toEqual({
        charges: 1,
        chargeCalls: 2, // the one that never left, and N's
        lookups: 2,
        paid: 1,
        payments: 1,
      });
    });

    it('the poison cap: after maxTakeovers takeovers the next one hands the record to an operator, with its reason, counted', async () => {
      await using env = await makeEnv();
      const metrics = testMeter();
      const maxTakeovers = 2;
      const gates: Gate[] = [];
      const stalled: Promise<unknown>[] = [];
      const servers: AsyncDisposable[] = [];
      const attempts = async () => {
        const [row] = await env.db
          .execute(sql`select attempts from idem_records where scope = ${acct}`)
          .then(rowsOf);
        return Number(row?.attempts ?? 0);
      };
      try {
        // The first worker and `maxTakeovers` successors each stall before the charge, and each
        // successor arrives after the last one's lease ran out.
        for (let i = 0; i <= maxTakeovers; i++) {
          const gate = new Gate();
          gates.push(gate);
          const server = await paymentsServer(env, env.storeAt(i * (LEASE + 1_000)), {
            beforeCharge: () => gate.opened,
            maxTakeovers,
            meter: metrics.meter,
          });
          servers.push(server);
          stalled.push(server.call('pay', pay, 'k-poison'));
          await expect.poll(attempts).toBe(i + 1);
        }
        const last = await paymentsServer(env, env.storeAt((maxTakeovers + 1) * (LEASE + 1_000)), {
          maxTakeovers,
          meter: metrics.meter,
        });
        servers.push(last);
        const refused = await last.call('pay', pay, 'k-poison');
        expect(refused.status).toBe(409);
        expect(refused.json.error.data.idem.reason).toBe('IDEMPOTENCY_OUTCOME_UNKNOWN');
        const store = env.store;
        const [stuck] = (await store.listStuck({ graceMs: 0, limit: 10 })).filter(
          (r) => r.scope === acct,
        );
        expect(stuck).toMatchObject({
          state: 'NEEDS_RECONCILIATION',
          reconcileReason: 'takeover_limit',
          takeovers: maxTakeovers,
          leaseOwner: null,
        });
        expect((await store.stuckReport({ graceMs: 0 })).needsReconciliation).toBe(1);
        expect(
          await metrics.sum(SERVER_METRICS.reconciliations, {
            'idem.reconcile_reason': 'takeover_limit',
          }),
        ).toBe(1);
        // The stalled workers wake to a record they no longer own: nothing is charged.
        for (const gate of gates) gate.open();
        for (const response of (await Promise.all(stalled)) as { status: number }[]) {
          expect(response.status).toBe(409);
        }
        expect(await processorCounts(env.count)).toMatchObject({ chargeCalls: 0, paid: 0 });
      } finally {
        for (const gate of gates) gate.open();
        for (const server of servers) await server[Symbol.asyncDispose]();
      }
    });

    it('a heartbeat extends the lease: a retry after the original lease but inside the extended one is told to wait', async () => {
      await using env = await makeEnv();
      const gate = new Gate();
      // The worker's heartbeat happens 8 s "later" by the database clock; the lease is 10 s.
      const heartbeatLater = new Proxy(env.store as object, {
        get: (target, property, receiver) =>
          property === 'extendLease'
            ? env.storeAt(8_000).extendLease.bind(env.storeAt(8_000))
            : ((Reflect.get(target, property, receiver) as Function).bind?.(target) ??
              Reflect.get(target, property, receiver)),
      }) as RecoveryStore<any>;
      await using worker = await paymentsServer(env, heartbeatLater, {
        heartbeatAfterReserve: true,
        beforeCharge: () => gate.opened,
      });
      await using at12s = await paymentsServer(env, env.storeAt(12_000));
      await using at19s = await paymentsServer(env, env.storeAt(19_000));
      const first = worker.call('pay', pay, 'k-heartbeat');
      await expect.poll(() => env.count(sql`select 1 from test_payments`)).toBe(1);
      await expect.poll(async () => (await leaseOf(env)) > 15_000).toBe(true); // extended to ~18 s
      // 12 s: past the original lease (10 s), inside the extended one (18 s): still the worker's.
      const early = await at12s.call('pay', pay, 'k-heartbeat');
      expect(early.status).toBe(409);
      // 19 s: past the extended lease: taken over.
      expect((await at19s.call('pay', pay, 'k-heartbeat')).status).toBe(200);
      gate.open();
      expect((await first).status).toBe(409); // the worker was fenced out after the takeover
      expect(await processorCounts(env.count)).toMatchObject({ chargeCalls: 1, paid: 1 });
    });

    it('an external call that timed out after the remote committed is looked up, never called twice', async () => {
      await using env = await makeEnv();
      await using server = await paymentsServer(env, env.store, {
        fault: { at: 'charge-timeout-after-commit', how: 'throw' },
      });
      const first = await server.call('pay', pay, 'k-timeout');
      expect(first.status).toBe(503);
      expect(first.json.error.data.idem.reason).toBe('IDEMPOTENCY_OUTCOME_LOOKUP_PENDING');
      expect(first.headers['retry-after']).toBe('1');
      expect(await stateOf(env)).toBe('OUTCOME_UNKNOWN');
      // While the call could still be in flight, a lookup could miss it: the retry is told to wait.
      const early = await server.call('pay', pay, 'k-timeout');
      expect(early.status).toBe(409);
      expect(early.json.error.data.idem.reason).toBe('IDEMPOTENCY_REQUEST_IN_PROGRESS');
      await using later = await paymentsServer(env, env.storeAt(CALL_SETTLED + 1_000));
      const retry = await later.call('pay', pay, 'k-timeout');
      expect(retry.status).toBe(200);
      expect(await processorCounts(env.count)).toEqual({
        charges: 1,
        chargeCalls: 1,
        lookups: 1,
        paid: 1,
        payments: 1,
      });
    });

    it('a record erased after its external call began is never re-run blind: it goes to an operator', async () => {
      await using env = await makeEnv();
      await using server = await paymentsServer(env, env.store, {
        fault: { at: 'charge-timeout-after-commit', how: 'throw' },
      });
      expect((await server.call('pay', pay, 'k-erased')).status).toBe(503);
      expect(await env.store.eraseScope(acct)).toBe(1);
      await using later = await paymentsServer(env, env.storeAt(CALL_SETTLED + 1_000));
      const retry = await later.call('pay', pay, 'k-erased');
      expect(retry.status).toBe(409);
      expect(retry.json.error.data.idem.reason).toBe('IDEMPOTENCY_OUTCOME_UNKNOWN');
      expect(await stateOf(env)).toBe('NEEDS_RECONCILIATION');
      const [row] = await env.db
        .execute(sql`select reconcile_reason from idem_records where scope = ${acct}`)
        .then(rowsOf);
      expect(row!.reconcile_reason).toBe('erased_after_call');
      expect(await processorCounts(env.count)).toMatchObject({ chargeCalls: 1, lookups: 0 });
    });

    it('a call confirmed "not received" by the lookup is made again, once', async () => {
      await using env = await makeEnv();
      await using server = await paymentsServer(env, env.store, {
        fault: { at: 'charge-fails-before-send', how: 'throw' },
      });
      expect((await server.call('pay', pay, 'k-unsent')).status).toBe(503);
      await using later = await paymentsServer(env, env.storeAt(CALL_SETTLED + 1_000));
      const retry = await later.call('pay', pay, 'k-unsent');
      expect(retry.status).toBe(200);
      expect(await processorCounts(env.count)).toEqual({
        charges: 1,
        chargeCalls: 2,
        lookups: 1,
        paid: 1,
        payments: 1,
      });
    });

    it('without a lookup an unknown outcome goes to manual reconciliation, is never retried by chance, and an operator resolves it', async () => {
      await using env = await makeEnv();
      await using server = await paymentsServer(env, env.store, {
        withLookup: false,
        fault: { at: 'charge-timeout-after-commit', how: 'throw' },
      });
      const first = await server.call('pay', pay, 'k-manual');
      expect(first.status).toBe(409);
      expect(first.json.error.data.idem.reason).toBe('IDEMPOTENCY_OUTCOME_UNKNOWN');
      const again = await server.call('pay', pay, 'k-manual');
      expect(again.json.error.data.idem.reason).toBe('IDEMPOTENCY_OUTCOME_UNKNOWN');
      expect(await processorCounts(env.count)).toMatchObject({ chargeCalls: 1, paid: 0 });

      const store = env.store;
      const record = (await store.readRecovery({
        scope: acct,
        procedure: 'pay',
        keyHash: hashIdempotencyKey('k-manual', TEST_KEY_SECRET, acct),
      }))!;
      expect(record.state).toBe('NEEDS_RECONCILIATION');
      expect(record.reconcileReason).toBe('no_lookup');
      const body = JSON.stringify({ paymentId: 0, chargeId: 'ch_manual', amount: 700 });
      const window = {
        replayWindowMs: DEFAULT_REPLAY_WINDOW_MS,
        retentionMs: DEFAULT_RETENTION_MS,
      };
      expect(
        await store.resolve(
          { id: record.id, version: record.version + 1 },
          {
            state: 'COMPLETED',
            response: { status: 200, body, ...window },
            actor: 'ops',
            note: 'stale',
          },
        ),
      ).toBe(false);
      expect(
        await store.resolve(
          { id: record.id, version: record.version },
          {
            state: 'COMPLETED',
            response: { status: 200, body, ...window },
            actor: 'ops@example',
            note: 'charge ch_manual confirmed with the processor',
          },
        ),
      ).toBe(true);
      const replay = await server.call('pay', pay, 'k-manual');
      expect(replay.status).toBe(200);
      expect(replay.json.result.data.chargeId).toBe('ch_manual');
      const audit = await store.listAudit(record.id);
      expect(audit).toHaveLength(1);
      expect(audit[0]).toMatchObject({
        actor: 'ops@example',
        fromState: 'NEEDS_RECONCILIATION',
        toState: 'COMPLETED',
      });
    });

    it('an operator resolves an unknown outcome as a failure: retries get its code, status and message, never a 500', async () => {
      await using env = await makeEnv();
      await using server = await paymentsServer(env, env.store as never, {
        withLookup: false,
        fault: { at: 'charge-timeout-after-commit', how: 'throw' },
      });
      expect((await server.call('pay', pay, 'k-declined')).status).toBe(409);
      const store = env.store as unknown as RecoveryStore<unknown>;
      const record = (await store.readRecovery({
        scope: acct,
        procedure: 'pay',
        keyHash: hashIdempotencyKey('k-declined', TEST_KEY_SECRET, acct),
      }))!;
      // What docs/operations.md used to invite: a free-form body. Refused before anything is written.
      const freeForm = checkResolution({
        state: 'TERMINAL_FAILURE',
        status: 402,
        body: '{"error":"card declined"}',
      });
      expect(freeForm).toMatchObject({
        ok: false,
        message: expect.stringMatching(/code.*message/),
      });
      const checked = checkResolution({
        state: 'TERMINAL_FAILURE',
        body: '{"code":"PRECONDITION_FAILED","message":"the card was declined"}',
      });
      if (!checked.ok) throw new Error(checked.message);
      expect(checked.response).toMatchObject({ status: 412 });
      const resolved = await store.resolve(
        { id: record.id, version: record.version },
        {
          state: 'TERMINAL_FAILURE',
          response: {
            ...checked.response!,
            replayWindowMs: DEFAULT_REPLAY_WINDOW_MS,
            retentionMs: DEFAULT_RETENTION_MS,
          },
          actor: 'ops@example',
          note: 'the processor declined it',
        },
      );
      expect(resolved).toBe(true);
      const replay = await server.call('pay', pay, 'k-declined');
      expect(replay.status).toBe(412);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.json.error.message).toBe('the card was declined');
      expect(replay.json.error.data.code).toBe('PRECONDITION_FAILED');
      expect(await processorCounts(env.count)).toMatchObject({ chargeCalls: 1 });
    });

    it('a failure while saving the result rolls back the local writes and stores nothing', async () => {
      await using env = await makeEnv();
      // At commit (the default): the record, the work's last statement, is refused by the database.
      await using server = await paymentsServer(env, refuseRecordOnce(env.store));
      const first = await server.call('createResource', { name: 'r1' }, 'k-save');
      expect(first.status).toBe(503);
      expect(first.json.error.data.idem.reason).toBe('IDEMPOTENCY_STORE_UNAVAILABLE');
      expect(await env.count(sql`select 1 from test_tokens`)).toBe(0);
      expect(await env.count(sql`select 1 from idem_records where scope = ${acct}`)).toBe(0);
      const retry = await server.call('createResource', { name: 'r1' }, 'k-save');
      expect(retry.status).toBe(200);
      expect(retry.headers['idempotent-replayed']).toBeUndefined();
      expect(await env.count(sql`select 1 from test_tokens`)).toBe(1);
    });

    it('claim first: a failure of the completion rolls back the claim and the local writes', async () => {
      await using env = await makeEnv();
      const failing = failOnce(env.store, 'complete');
      await using server = await paymentsServer(env, failing, { claim: 'first' });
      const first = await server.call('createResource', { name: 'r1' }, 'k-save');
      expect(first.status).toBe(503);
      expect(first.json.error.data.idem.reason).toBe('IDEMPOTENCY_STORE_UNAVAILABLE');
      expect(await env.count(sql`select 1 from test_tokens`)).toBe(0);
      expect(await env.count(sql`select 1 from idem_records where scope = ${acct}`)).toBe(0);
      const retry = await server.call('createResource', { name: 'r1' }, 'k-save');
      expect(retry.status).toBe(200);
      expect(await env.count(sql`select 1 from test_tokens`)).toBe(1);
    });

    it('an external success is never forgotten when saving the result fails: the retry resumes without calling again', async () => {
      await using env = await makeEnv();
      await using first = await paymentsServer(env, failOnce(env.store, 'complete'));
      expect((await first.call('pay', pay, 'k-remember')).status).toBe(503);
      expect(await stateOf(env)).toBe('IN_PROGRESS');
      await using later = await paymentsServer(env, env.storeAt(LEASE + 1_000));
      const retry = await later.call('pay', pay, 'k-remember');
      expect(retry.status).toBe(200);
      expect(await processorCounts(env.count)).toEqual({
        charges: 1,
        chargeCalls: 1,
        lookups: 0,
        paid: 1,
        payments: 1,
      });
    });

    it('replays up to the end of the replay window; after it the key is a new request and the old row stays until cleanup', async () => {
      await using env = await makeEnv();
      await using now = await paymentsServer(env, env.store);
      const first = await now.call('createResource', { name: 'w' }, 'k-window');
      await using before = await paymentsServer(
        env,
        env.storeAt(DEFAULT_REPLAY_WINDOW_MS - 60_000),
      );
      const replay = await before.call('createResource', { name: 'w' }, 'k-window');
      expect(replay.headers['idempotent-replayed']).toBe('true');
      await using after = await paymentsServer(env, env.storeAt(DEFAULT_REPLAY_WINDOW_MS + 60_000));
      const fresh = await after.call('createResource', { name: 'w' }, 'k-window');
      expect(fresh.status).toBe(200);
      expect(fresh.headers['idempotent-replayed']).toBeUndefined();
      expect(fresh.json.result.data.id).not.toBe(first.json.result.data.id);
      const rows = await env.db
        .execute(
          sql`select state, superseded_at is not null as superseded from idem_records where scope = ${acct} order by id`,
        )
        .then(rowsOf);
      expect(rows).toEqual([
        { state: 'COMPLETED', superseded: true },
        { state: 'COMPLETED', superseded: false },
      ]);
    });

    it('the reaper deletes completed records only past the cleanup threshold, never in-progress ones', async () => {
      await using env = await makeEnv();
      const gate = new Gate();
      await using server = await paymentsServer(env, env.store, {
        beforeCharge: () => gate.opened,
      });
      expect((await server.call('createResource', { name: 'c' }, 'k-clean')).status).toBe(200);
      const running = server.call('pay', pay, 'k-running');
      await expect.poll(() => env.count(sql`select 1 from test_payments`)).toBe(1);
      const reap = (shift: number) =>
        createReaper({ store: env.storeAt(shift), stuckAfterMs: 60_000 }).runOnce();
      expect((await reap(DEFAULT_RETENTION_MS - 60_000)).deleted).toBe(0);
      const late = await reap(DEFAULT_RETENTION_MS + 60_000);
      expect(late.deleted).toBe(1);
      expect(late.stuck.abandoned).toBe(1); // the payment's lease ran out long ago by that clock
      expect(await env.count(sql`select 1 from idem_records where scope = ${acct}`)).toBe(1);
      gate.open();
      expect((await running).status).toBe(200);
    });
  });
}

function rowsOf(result: unknown): Record<string, unknown>[] {
  return Array.isArray(result) ? result : (result as { rows: Record<string, unknown>[] }).rows;
}

/** Milliseconds from the record's creation to its lease end. */
async function leaseOf(env: TestEnv): Promise<number> {
  const [row] = await env.db
    .execute(
      sql`select (extract(epoch from lease_expires_at - created_at) * 1000)::int as ms from idem_records where scope = ${acct}`,
    )
    .then(rowsOf);
  return Number(row?.ms ?? 0);
}

async function stateOf(env: TestEnv): Promise<string> {
  const [row] = await env.db
    .execute(sql`select state from idem_records where scope = ${acct}`)
    .then(rowsOf);
  return row!.state as string;
}

/** The store, but `method` throws the first time it is called (a store failure at that step). */
/**
 * `store` whose first record taken at commit the database refuses (a state its CHECK constraint
 * does not admit): the record statement fails after the work ran, inside the work's transaction.
 */
function refuseRecordOnce(store: RecoveryStore<any>): RecoveryStore<any> {
  let refused = false;
  return new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      if (property !== 'commitWithRecord') return value.bind(target);
      const commitWithRecord: RecoveryStore<any>['commitWithRecord'] = (work) =>
        target.commitWithRecord(async (tx) => {
          const done = await work(tx);
          if (refused) return done;
          refused = true;
          return { ...done, record: { ...done.record, state: 'REFUSED' as 'COMPLETED' } };
        });
      return commitWithRecord;
    },
  });
}

function failOnce<T extends object>(store: T, method: keyof T & string): T {
  let failed = false;
  return new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== 'function') return value;
      if (property === method && !failed) {
        return async () => {
          failed = true;
          throw new Error(`injected store failure in ${method}`);
        };
      }
      return value.bind(target);
    },
  });
}
