import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createTestDatabase, postgresAvailable } from '@idem/fixtures';
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

/** Runs the CLI with `env` (over the test's, without IDEM_KEY_SECRET) and reports how it ended. */
async function exitOf(env: Record<string, string>, ...args: string[]) {
  const { IDEM_KEY_SECRET: _unset, ...inherited } = process.env;
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', cli, ...args], {
      env: { ...inherited, ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const { code, stdout, stderr } = error as { code: number; stdout: string; stderr: string };
    return { code, stdout, stderr };
  }
}

const DAY = 24 * 60 * 60 * 1000;

/**
 * Usage errors end before the database is reached: a DATABASE_URL nothing listens on proves it.
 * Each exits 2, names the fix, and prints no stack trace (exit 1 is `audit`'s "findings").
 */
describe('idem-admin usage errors', () => {
  const nowhere = { DATABASE_URL: 'postgres://idem@127.0.0.1:9/nowhere' };
  const operationId = '47e280e2-ca40-4b44-8448-51622564c56e';
  const completed = [
    'resolve',
    operationId,
    '--state',
    'COMPLETED',
    '--actor',
    'ops',
    '--note',
    'n',
  ];
  const body = ['--body', '{"chargeId":"ch_9"}'];

  it.each([
    [
      'find --key without IDEM_KEY_SECRET',
      ['find', '--scope', 's', '--procedure', 'p', '--key', 'pay-42'],
      /set IDEM_KEY_SECRET.*or give --key-hash/,
    ],
    [
      'find without --key or --key-hash',
      ['find', '--scope', 's', '--procedure', 'p'],
      /give --key or --key-hash/,
    ],
    [
      'COMPLETED without --replay-window',
      [...completed, ...body, '--retention', '72h'],
      /pass the procedure's replayWindowMs, e\.g\. --replay-window 24h/,
    ],
    [
      'COMPLETED without --retention',
      [...completed, ...body, '--replay-window', '7d'],
      /pass the procedure's retentionMs, e\.g\. --retention 72h/,
    ],
    [
      'TERMINAL_FAILURE without either window',
      [
        'resolve',
        operationId,
        '--state',
        'TERMINAL_FAILURE',
        '--actor',
        'ops',
        '--note',
        'n',
        '--body',
        '{"code":"NOT_FOUND","message":"no such charge"}',
      ],
      /pass the procedure's replayWindowMs, e\.g\. --replay-window 24h/,
    ],
    [
      'RETRYABLE_FAILURE without --retention',
      ['resolve', operationId, '--state', 'RETRYABLE_FAILURE', '--actor', 'ops', '--note', 'n'],
      /pass the procedure's retentionMs, e\.g\. --retention 72h/,
    ],
    [
      'RETRYABLE_FAILURE with --replay-window',
      [
        'resolve',
        operationId,
        '--state',
        'RETRYABLE_FAILURE',
        '--actor',
        'ops',
        '--note',
        'n',
        '--replay-window',
        '24h',
        '--retention',
        '72h',
      ],
      /RETRYABLE_FAILURE stores no response: drop --replay-window/,
    ],
    [
      'a retention shorter than the replay window',
      [...completed, ...body, '--replay-window', '7d', '--retention', '72h'],
      /--retention \(72h\) must be at least --replay-window \(7d\)/,
    ],
    [
      'a mistyped option',
      [...completed, ...body, '--replay-windw', '7d', '--retention', '14d'],
      /unknown option --replay-windw \(did you mean --replay-window\?\)/,
    ],
    [
      'a window that is no duration',
      [...completed, ...body, '--replay-window', '7 days', '--retention', '14d'],
      /--replay-window must be a duration such as 7d, 24h, 90m, 30s or 1500ms, got "7 days"/,
    ],
  ])('%s: exit 2, naming the fix', async (_name, args, message) => {
    const { code, stdout, stderr } = await exitOf(nowhere, ...args);
    expect({ code, stdout }).toEqual({ code: 2, stdout: '' });
    expect(stderr).toMatch(message);
    expect(stderr).not.toMatch(/^\s+at /m);
  });
});

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
          replayWindowMs: DAY,
          retentionMs: 3 * DAY,
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
        // A dead-letter queue's procedure: replayed for 7 days, not the default 24 hours.
        '--replay-window',
        '7d',
        '--retention',
        '14d',
      );
      expect(resolved).toEqual({
        resolved: operationId,
        state: 'COMPLETED',
        replayWindowMs: 7 * DAY,
        retentionMs: 14 * DAY,
      });
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
      const completedAt = Date.parse(after.completedAt);
      expect(Date.parse(after.replayExpiresAt) - completedAt).toBe(7 * DAY);
      expect(Date.parse(after.purgeAfter) - completedAt).toBe(14 * DAY);
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
          '--retention',
          '72h',
        ),
      ).rejects.toThrow(/changed since it was read|already settled/);
    } finally {
      await client.end({ timeout: 1 });
    }
  });

  it("releases a key for the procedure's retention, and no resolution of an unknown record is a crash", async () => {
    await using database = await createTestDatabase('idem_admin');
    const client = postgres(database.url, { max: 2, onnotice: () => {} });
    try {
      const db = drizzle(client);
      await migrate(db);
      const store = createPostgresJsStore(db);
      const claim = await store.claim({
        scope: 'acct_ops',
        procedure: 'payments.create',
        keyHash: keyHashOf('pay-43', KEY_SECRET, 'acct_ops'),
        fingerprint: 'f'.repeat(64),
        fingerprintVersion: 1,
        leaseMs: 30_000,
        owner: 'test',
      });
      if (claim.kind !== 'claimed') throw new Error('expected a fresh claim');
      const { operationId } = claim.record;
      const fence = { id: claim.record.id, version: claim.record.version };
      expect(await store.markUnsettled(fence, 'OUTCOME_UNKNOWN')).toBe(true);
      const released = await admin(
        database.url,
        'resolve',
        operationId,
        '--state',
        'RETRYABLE_FAILURE',
        '--actor',
        'ops@example',
        '--note',
        'the processor has no charge for it',
        '--retention',
        '7d',
      );
      expect(released).toEqual({
        resolved: operationId,
        state: 'RETRYABLE_FAILURE',
        retentionMs: 7 * DAY,
      });
      const record = (await store.findByOperationId(operationId))!;
      expect(record.state).toBe('RETRYABLE_FAILURE');
      expect(record.purgeAfter!.getTime() - record.updatedAt.getTime()).toBe(7 * DAY);

      const unknown = await exitOf(
        { DATABASE_URL: database.url },
        'resolve',
        '00000000-0000-4000-8000-000000000000',
        '--state',
        'RETRYABLE_FAILURE',
        '--actor',
        'ops',
        '--note',
        'n',
        '--retention',
        '72h',
      );
      expect(unknown.code).toBe(2);
      expect(unknown.stderr).toMatch(/no record with operation id 00000000-/);
      expect(unknown.stderr).not.toMatch(/^\s+at /m);
    } finally {
      await client.end({ timeout: 1 });
    }
  });
});
