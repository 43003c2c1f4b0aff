/**
 * A stale owner finishing after a takeover (local store contract, both drivers): its fenced
 * `complete` writes nothing, and the new owner's outcome is the one stored. Guards the fence of
 * `completionStatements.ts` (one fragment shared by every owner's write).
 */
import { FINGERPRINT_VERSION } from '@idem/contract';
import { postgresAvailable } from '@idem/fixtures';
import { describe, expect, it } from 'vitest';
import { pgliteEnv, postgresEnv, type TestEnv } from '../fixtures/databases.js';

const available = await postgresAvailable();
const LEASE = 5_000;
const response = (body: string) => ({
  status: 200,
  body,
  replayWindowMs: 60_000,
  retentionMs: 120_000,
});

async function staleOwnerLoses(env: TestEnv) {
  const claim = {
    scope: 'acct_stale',
    procedure: 'orders.create',
    keyHash: 'stale-owner-key',
    fingerprint: 'fp',
    fingerprintVersion: FINGERPRINT_VERSION,
    leaseMs: LEASE,
    owner: 'W',
  };
  const first = await env.store.claim(claim);
  if (first.kind !== 'claimed') throw new Error(`expected a claim, got ${first.kind}`);
  // N arrives after W's lease ran out (a store whose clock runs past it) and takes the key over.
  const later = env.storeAt(LEASE + 1_000);
  const second = await later.claim({ ...claim, owner: 'N' });
  if (second.kind !== 'claimed') throw new Error(`expected a takeover, got ${second.kind}`);
  expect(second.takeover).toBe(true);
  expect(second.record.version).toBe(first.record.version + 1);

  const stale = { id: first.record.id, version: first.record.version };
  expect(await env.store.complete(stale, response('"W"'))).toBe(false);
  expect(await env.store.fail(stale, response('"W failed"'))).toBe(false);
  expect(await env.store.release(stale, { retentionMs: 120_000 })).toBe(false);

  const owner = { id: second.record.id, version: second.record.version };
  expect(await later.complete(owner, response('"N"'))).toBe(true);
  const stored = await later.read(claim);
  expect(stored).toMatchObject({ state: 'COMPLETED', responseBody: '"N"' });
}

describe('a stale owner completing after a takeover', () => {
  it('PGlite: its complete, fail and release write nothing; the new owner stands', async () => {
    await using env = await pgliteEnv();
    await staleOwnerLoses(env);
  });

  it.skipIf(!available)(
    'PostgreSQL: its complete, fail and release write nothing; the new owner stands',
    async () => {
      await using env = await postgresEnv();
      await staleOwnerLoses(env);
    },
  );
});
