import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { RecoveryStore } from '@idem/contract';
import type { IdemServerEvent } from '../src/index.js';
import { hashIdempotencyKey } from '../src/operator.js';
import type { TestEnv } from './fixtures/databases.js';
import { post, serve } from './fixtures/httpHarness.js';
import {
  createPaymentsApp,
  PAY_LATER_WINDOWS,
  processorCounts,
  type PaymentsAppOptions,
} from './fixtures/paymentsApp.js';
import { Gate, TEST_KEY_SECRET } from './fixtures/testApp.js';

const acct = 'acct_ops';

async function paymentsServer(env: TestEnv, options: PaymentsAppOptions = {}) {
  const app = createPaymentsApp(env.db, env.store, options);
  const server = await serve(app.router);
  const ctx = { account: acct } as never;
  return Object.assign(server, {
    app,
    ctx,
    call: (path: string, input: unknown, key: string, account = acct) =>
      post(server.url, path, input, { key, account }),
  });
}

/** Long-running work, cancellation, and results that are not stored whole; once per database. */
export function describeOperationGates(name: string, makeEnv: () => Promise<TestEnv>): void {
  describe(`operation gates on ${name}`, () => {
    it('answers long-running work 202 with an operation id; a duplicate gets the same operation, never a second job', async () => {
      await using env = await makeEnv();
      const gate = new Gate();
      await using server = await paymentsServer(env, { beforeCharge: () => gate.opened });
      const first = await server.call('payLater', { amount: 900 }, 'k-later');
      expect(first.status).toBe(202);
      const { operationId } = first.json.result.data;
      expect(first.json.result.data.state).toBe('IN_PROGRESS');
      const duplicate = await server.call('payLater', { amount: 900 }, 'k-later');
      expect(duplicate.status).toBe(202);
      expect(duplicate.json.result.data.operationId).toBe(operationId);
      expect(await server.app.idem.operationStatus(server.ctx, operationId)).toMatchObject({
        state: 'IN_PROGRESS',
      });
      gate.open();
      await expect
        .poll(async () => (await server.app.idem.operationStatus(server.ctx, operationId))?.state)
        .toBe('COMPLETED');
      const status = await server.app.idem.operationStatus(server.ctx, operationId);
      expect(status?.result).toMatchObject({
        amount: 900,
        chargeId: expect.stringMatching(/^ch_/),
      });
      expect(await processorCounts(env.count)).toEqual({
        charges: 1,
        chargeCalls: 1,
        lookups: 0,
        paid: 1,
        payments: 1,
      });
      // Another caller cannot see or cancel it.
      expect(
        await server.app.idem.operationStatus({ account: 'acct_other' } as never, operationId),
      ).toBeNull();
      expect(await server.app.idem.cancel({ account: 'acct_other' } as never, operationId)).toBe(
        'not-found',
      );
    });

    it('cancels work before its irreversible step; the worker stops and nothing is charged', async () => {
      await using env = await makeEnv();
      const gate = new Gate();
      const events: IdemServerEvent[] = [];
      await using server = await paymentsServer(env, { beforeCharge: () => gate.opened, events });
      const { operationId } = (await server.call('payLater', { amount: 5 }, 'k-cancel')).json.result
        .data;
      await expect.poll(() => env.count(sql`select 1 from test_payments`)).toBe(1);
      expect(await server.app.idem.cancel(server.ctx, operationId)).toBe('cancelled');
      gate.open();
      await expect
        .poll(
          async () =>
            (await server.app.idem.operationStatus(server.ctx, operationId))?.error?.message,
        )
        .toBe('the operation was cancelled');
      // The worker woke up, tried to record the charge's intent, was fenced out, and stopped.
      await expect
        .poll(() => events.some((e) => e.type === 'executed' && e.outcome === 'discarded'))
        .toBe(true);
      expect(await env.count(sql`select 1 from test_processor_calls`)).toBe(0);
      expect(await server.app.idem.cancel(server.ctx, operationId)).toBe('finished');
      // The cancelled record keeps payLater's own windows, not the defaults.
      const [windows] = await env.db
        .execute(
          sql`select extract(epoch from replay_expires_at - completed_at) * 1000 as replay_ms,
                extract(epoch from purge_after - completed_at) * 1000 as retention_ms
              from idem_records where operation_id = ${operationId}`,
        )
        .then(rowsOf);
      expect([Number(windows!.replay_ms), Number(windows!.retention_ms)]).toEqual([
        PAY_LATER_WINDOWS.replayWindowMs,
        PAY_LATER_WINDOWS.retentionMs,
      ]);
    });

    it('refuses to cancel once an external call may have happened', async () => {
      await using env = await makeEnv();
      const gate = new Gate();
      let charging!: () => void;
      const reached = new Promise<void>((resolve) => (charging = resolve));
      await using server = await paymentsServer(env, {
        withLookup: true,
        beforeCharge: async () => undefined,
      });
      // Hold the processor call itself: the intent is recorded, the call is in flight.
      const processor = server.app.processor;
      const charge = processor.charge;
      processor.charge = async (...args) => {
        charging();
        await gate.opened;
        return charge(...args);
      };
      const { operationId } = (await server.call('payLater', { amount: 5 }, 'k-late-cancel')).json
        .result.data;
      await reached;
      expect(await server.app.idem.cancel(server.ctx, operationId)).toBe('irreversible');
      gate.open();
      await expect
        .poll(async () => (await server.app.idem.operationStatus(server.ctx, operationId))?.state)
        .toBe('COMPLETED');
    });

    it('keeps a secret shown once encrypted at rest and replays it; redacted replays never contain it; "none" refuses the retry', async () => {
      await using env = await makeEnv();
      await using server = await paymentsServer(env);
      const first = await server.call('createToken', { name: 't' }, 'k-enc');
      const replay = await server.call('createToken', { name: 't' }, 'k-enc');
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.text).toBe(first.text);
      const stored = await env.count(
        sql`select 1 from idem_records where response_body like '%tok_secret%'`,
      );
      expect(stored).toBe(0);

      const redacted = await server.call('createTokenRedacted', { name: 'r' }, 'k-red');
      expect(redacted.json.result.data.token).toMatch(/^tok_secret_/);
      const redactedReplay = await server.call('createTokenRedacted', { name: 'r' }, 'k-red');
      expect(redactedReplay.json.result.data).toEqual({ name: 'r', created: true });

      expect((await server.call('createTokenOnce', { name: 'o' }, 'k-once')).status).toBe(200);
      const refused = await server.call('createTokenOnce', { name: 'o' }, 'k-once');
      expect(refused.status).toBe(409);
      expect(refused.json.error.data.idem.reason).toBe('IDEMPOTENCY_REPLAY_UNAVAILABLE');
    });

    it('a token returned by an external step is never readable in the table, and a resumed run still gets it', async () => {
      await using env = await makeEnv();
      await using server = await paymentsServer(env);
      const searchTable = () =>
        env.count(sql`select 1 from idem_records r where r::text like '%tok_secret%'`);
      for (const [path, key] of [
        ['issueToken', 'k-issue-enc'],
        ['issueTokenRedacted', 'k-issue-red'],
      ] as const) {
        // The first attempt fails after the token was issued: the step's result is recorded.
        expect((await server.call(path, { name: 'ci' }, key)).status).toBe(503);
        expect(await searchTable()).toBe(0);
        // The retry resumes from that recorded result: the same token, no second issue call.
        const resumed = await server.call(path, { name: 'ci' }, key);
        expect(resumed.status).toBe(200);
        const { operationId } = (await env.store.readRecovery({
          scope: acct,
          procedure: path,
          keyHash: hashIdempotencyKey(key, TEST_KEY_SECRET, acct),
        }))!;
        expect(resumed.json.result.data).toEqual({
          name: 'ci',
          token: `tok_secret_${operationId}`,
        });
        expect(await searchTable()).toBe(0);
      }
      expect(await env.count(sql`select 1 from test_processor_calls where kind = 'issue'`)).toBe(2);
      // Sealed, not dropped: the steps column holds ciphertext.
      expect(
        await env.count(
          sql`select 1 from idem_records where steps like '%idem:enc:aes256gcm:v1:%'`,
        ),
      ).toBe(2);
    });

    it('rebuilds a reference replay from the current resource, and says clearly when it was deleted', async () => {
      await using env = await makeEnv();
      await using server = await paymentsServer(env);
      const first = await server.call('createResource', { name: 'v1' }, 'k-ref');
      const id = first.json.result.data.id;
      await env.db.execute(sql`update test_tokens set name = 'v2' where id = ${id}`);
      const replay = await server.call('createResource', { name: 'v1' }, 'k-ref');
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.json.result.data).toMatchObject({ id, name: 'v2' });
      await env.db.execute(sql`delete from test_tokens where id = ${id}`);
      const gone = await server.call('createResource', { name: 'v1' }, 'k-ref');
      expect(gone.status).toBe(404);
      expect(gone.json.error.data.idem.reason).toBe('IDEMPOTENCY_RESOURCE_GONE');
      expect(await env.count(sql`select 1 from test_tokens`)).toBe(0); // never recreated
    });

    it('erasing a user clears stored results and inputs but keeps the de-duplication identifiers', async () => {
      await using env = await makeEnv();
      await using server = await paymentsServer(env);
      await server.call('createToken', { name: 'e' }, 'k-erase');
      await server.call('pay', { amount: 3 }, 'k-erase-pay');
      const store = env.store;
      expect(await store.eraseScope(acct)).toBe(2);
      const left = await env.count(
        sql`select 1 from idem_records where scope = ${acct} and (response_body is not null or input_text is not null or steps is not null)`,
      );
      expect(left).toBe(0);
      const replay = await server.call('createToken', { name: 'e' }, 'k-erase');
      expect(replay.status).toBe(409);
      expect(replay.json.error.data.idem.reason).toBe('IDEMPOTENCY_REPLAY_UNAVAILABLE');
      const reused = await server.call('createToken', { name: 'other' }, 'k-erase');
      expect(reused.json.error.data.idem.reason).toBe('IDEMPOTENCY_KEY_REUSED');
      expect(await processorCounts(env.count)).toMatchObject({ chargeCalls: 1 });
    });
  });
}

function rowsOf(result: unknown): Record<string, unknown>[] {
  return Array.isArray(result) ? result : (result as { rows: Record<string, unknown>[] }).rows;
}
