import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createTestDatabase, postgresAvailable } from '@idem/testing';
import { createPostgresJsStore, migrate } from '@idem/store-drizzle/postgres-js';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import { adminCommands, keyHashOf } from '../src/index.js';

const run = promisify(execFile);
const cli = fileURLToPath(new URL('../src/cli.ts', import.meta.url));
const available = await postgresAvailable();

const KEY_SECRET = 'the-apps-key-secret-0123456789abcdef';

async function admin(url: string, ...args: string[]) {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', cli, ...args], {
    env: { ...process.env, DATABASE_URL: url, IDEM_KEY_SECRET: KEY_SECRET },
  });
  return JSON.parse(stdout);
}

describe.skipIf(!available)('idem-admin', () => {
  it('finds an unsettled record, lists it as stuck, resolves it with an audit row, and refuses bad input', async () => {
    await using database = await createTestDatabase('idem_admin');
    const client = postgres(database.url, { max: 2, onnotice: () => {} });
    try {
      const db = drizzle(client);
      await migrate(db);
      const store = createPostgresJsStore(db);
      const claim = await store.claim({
        scope: 'acct_ops',
        procedure: 'payments.create',
        keyHash: keyHashOf('pay-42', KEY_SECRET, 'acct_ops'),
        fingerprint: 'f'.repeat(64),
        fingerprintVersion: 1,
        leaseMs: 30_000,
        owner: 'test',
        input: '{"amount":1}',
      });
      if (claim.kind !== 'claimed') throw new Error('expected a fresh claim');
      const { operationId } = claim.record;
      expect(
        await store.markUnsettled(
          { id: claim.record.id, version: claim.record.version },
          'NEEDS_RECONCILIATION',
          'takeover_limit',
        ),
      ).toBe(true);

      const shown = await admin(database.url, 'show', operationId);
      expect(shown).toMatchObject({ operationId, state: 'NEEDS_RECONCILIATION', hasInput: true });
      expect(shown.inputText).toBeUndefined(); // user data stays hidden by default
      const found = await admin(
        database.url,
        'find',
        '--scope',
        'acct_ops',
        '--procedure',
        'payments.create',
        '--key',
        'pay-42',
      );
      expect(found.operationId).toBe(operationId);
      // Without the app's secret a key cannot be found: the table holds HMACs.
      await expect(
        adminCommands(store).find({
          scope: 'acct_ops',
          procedure: 'payments.create',
          key: 'pay-42',
        }),
      ).rejects.toThrow(/IDEM_KEY_SECRET/);
      expect(
        await adminCommands(store, { keySecret: 'another-secret-0123456789abcdefghij' }).find({
          scope: 'acct_ops',
          procedure: 'payments.create',
          key: 'pay-42',
        }),
      ).toBeNull();
      const stuck = await admin(database.url, 'stuck');
      expect(stuck.report.needsReconciliation).toBe(1);
      // Why a person is needed: the poison cap, here.
      expect(stuck.records[0]).toMatchObject({ reconcileReason: 'takeover_limit', takeovers: 0 });
      expect(stuck.records.map((r: { operationId: string }) => r.operationId)).toEqual([
        operationId,
      ]);

      await expect(
        admin(
          database.url,
          'resolve',
          operationId,
          '--state',
          'COMPLETED',
          '--actor',
          'ops',
          '--note',
          'x',
        ),
      ).rejects.toThrow(/--body is required for COMPLETED/);
      // A free-form failure body (what the docs used to invite) and a status replay would ignore.
      await expect(
        admin(
          database.url,
          'resolve',
          operationId,
          '--state',
          'TERMINAL_FAILURE',
          '--actor',
          'ops',
          '--note',
          'x',
          '--status',
          '402',
          '--body',
          '{"error":"card declined"}',
        ),
      ).rejects.toThrow(/\{"code":"<tRPC error code>","message":"..."\}/);
      await expect(
        adminCommands(store).resolve(operationId, {
          state: 'TERMINAL_FAILURE',
          actor: 'ops',
          note: 'x',
          response: { status: 402, body: '{"code":"NOT_FOUND","message":"no such charge"}' },
        }),
      ).rejects.toThrow(/replays with status 404: drop --status or give 404, not 402/);
      expect(await store.findByOperationId(operationId)).toMatchObject({
        state: 'NEEDS_RECONCILIATION',
      });
      const resolved = await admin(
        database.url,
        'resolve',
        operationId,
        '--state',
        'COMPLETED',
        '--actor',
        'ops@example',
        '--note',
        'confirmed ch_9 with the processor',
        '--status',
        '200',
        '--body',
        '{"chargeId":"ch_9"}',
      );
      expect(resolved).toEqual({ resolved: operationId, state: 'COMPLETED' });
      const audit = await admin(database.url, 'history', operationId);
      expect(audit).toMatchObject([
        {
          actor: 'ops@example',
          fromState: 'NEEDS_RECONCILIATION',
          toState: 'COMPLETED',
          note: 'confirmed ch_9 with the processor',
        },
      ]);
      const after = await admin(database.url, 'show', operationId, '--show-bodies');
      expect(after).toMatchObject({ state: 'COMPLETED', responseBody: '{"chargeId":"ch_9"}' });
      // Resolving again is refused: it is settled now (the state machine, not the operator, decides).
      await expect(
        admin(
          database.url,
          'resolve',
          operationId,
          '--state',
          'RETRYABLE_FAILURE',
          '--actor',
          'ops',
          '--note',
          'again',
        ),
      ).rejects.toThrow(/changed since it was read|already settled/);
    } finally {
      await client.end({ timeout: 1 });
    }
  });
});
