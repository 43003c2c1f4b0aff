import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  claimedRecord,
  claimInput,
  conformanceHelpers,
  existingRecord,
  releaseWindows,
  stored,
  storedResponse,
  UNSORTED_UNICODE_BODY,
  type ConformanceTarget,
} from '../conformanceTarget.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Claims, completions, failures, releases and their fences. */
export function claimCases<TTx>(target: () => ConformanceTarget<TTx>): void {
  const { store } = conformanceHelpers(target);

  describe('claim', () => {
    it('claims a fresh key: IN_PROGRESS, version 1, attempt 1, a uuid, a lease by database time', async () => {
      const input = claimInput({ leaseMs: 30_000, owner: 'worker-1' });
      const result = await store().claim(input);
      const record = claimedRecord(result);
      expect(record.takeover).toBe(false);
      expect(record).toMatchObject({
        scope: input.scope,
        procedure: input.procedure,
        keyHash: input.keyHash,
        fingerprint: input.fingerprint,
        fingerprintVersion: 1,
        state: 'IN_PROGRESS',
        version: 1,
        attempts: 1,
        leaseOwner: 'worker-1',
        leaseExpired: false,
        recoveryPoint: null,
        responseStatus: null,
        responseBody: null,
        completedAt: null,
        replayExpiresAt: null,
        purgeAfter: null,
      });
      expect(record.id).toMatch(/^[1-9][0-9]*$/);
      expect(record.operationId).toMatch(UUID);
      expect(record.updatedAt.getTime()).toBe(record.createdAt.getTime());
      expect(record.leaseExpiresAt!.getTime() - record.createdAt.getTime()).toBe(30_000);
      expect(record.leaseRemainingMs).toBeGreaterThan(25_000);
      expect(record.leaseRemainingMs).toBeLessThanOrEqual(30_000);
    });

    it('gives a fresh row the operation id the claim brings; a row found keeps its own', async () => {
      const operationId = randomUUID();
      const input = claimInput({ operationId });
      const first = claimedRecord(await store().claim(input));
      expect(first.operationId).toBe(operationId);
      expect((await store().findByOperationId(operationId))?.id).toBe(first.id);
      const other = randomUUID();
      const again = existingRecord(await store().claim({ ...input, operationId: other }));
      expect(again.operationId).toBe(operationId);
      expect(await store().findByOperationId(other)).toBeNull();
    });

    it('refuses an operation id that is not a UUID before asking the database', async () => {
      const input = claimInput({ operationId: 'order-42' });
      await expect(store().claim(input)).rejects.toThrow(
        'operationId must be a UUID (e.g. from crypto.randomUUID()), got "order-42"',
      );
      expect(await store().read(input)).toBeNull();
    });

    it('answers the same key again with the existing record', async () => {
      const input = claimInput();
      const first = claimedRecord(await store().claim(input));
      const again = existingRecord(await store().claim({ ...input, owner: 'worker-b' }));
      expect(again.id).toBe(first.id);
      expect(again.fingerprint).toBe(input.fingerprint);
      expect(again.state).toBe('IN_PROGRESS');
      expect(again.leaseOwner).toBe(first.leaseOwner);
      expect(again.version).toBe(1);
    });

    it('answers a different fingerprint with the original record, untouched', async () => {
      const input = claimInput({ fingerprint: 'original' });
      claimedRecord(await store().claim(input));
      const before = await store().read(input);
      const other = existingRecord(await store().claim({ ...input, fingerprint: 'other' }));
      expect(other.fingerprint).toBe('original');
      expect(stored(await store().read(input))).toEqual(stored(before));
    });

    it('keeps scopes apart: the same key hash in another scope is its own claim', async () => {
      const input = claimInput({ scope: 'acct_1:live' });
      const first = claimedRecord(await store().claim(input));
      const other = claimedRecord(await store().claim({ ...input, scope: 'acct_2:live' }));
      expect(other.id).not.toBe(first.id);
      expect(other.operationId).not.toBe(first.operationId);
      const otherProcedure = claimedRecord(
        await store().claim({ ...input, procedure: 'orders.cancel' }),
      );
      expect(otherProcedure.id).not.toBe(first.id);
    });

    it('reads null for a key never claimed', async () => {
      expect(await store().read(claimInput())).toBeNull();
    });

    it.each([
      ['leaseMs 0', { leaseMs: 0 }],
      ['leaseMs fractional', { leaseMs: 1.5 }],
      ['lockTimeoutMs 0 (would mean no timeout)', { lockTimeoutMs: 0 }],
      ['lockTimeoutMs above what PostgreSQL accepts', { lockTimeoutMs: 2 ** 31 }],
    ])('refuses %s', async (_name, overrides) => {
      const input = claimInput(overrides);
      await expect(store().claim(input)).rejects.toBeInstanceOf(RangeError);
      expect(await store().read(input)).toBeNull();
    });
  });

  describe('complete, fail, release', () => {
    it('replays a completed body byte for byte (unsorted keys, unicode)', async () => {
      const input = claimInput();
      const record = claimedRecord(await store().claim(input));
      const response = storedResponse({
        status: 201,
        replayWindowMs: 60_000,
        retentionMs: 120_000,
      });
      expect(await store().complete(record, response)).toBe(true);
      const replay = existingRecord(await store().claim(input));
      expect(replay).toMatchObject({
        id: record.id,
        state: 'COMPLETED',
        responseStatus: 201,
        leaseOwner: null,
        leaseExpiresAt: null,
        leaseExpired: false,
        leaseRemainingMs: 0,
        version: 1,
      });
      expect(replay.responseBody).toBe(UNSORTED_UNICODE_BODY);
      const completedAt = replay.completedAt!.getTime();
      expect(replay.replayExpiresAt!.getTime() - completedAt).toBe(60_000);
      expect(replay.purgeAfter!.getTime() - completedAt).toBe(120_000);
      expect(replay.updatedAt.getTime()).toBe(completedAt);
    });

    it('replays a terminal failure like a success', async () => {
      const input = claimInput();
      const record = claimedRecord(await store().claim(input));
      const body = '{"code":"BAD_REQUEST","message":"insufficient funds"}';
      expect(await store().fail(record, storedResponse({ status: 400, body }))).toBe(true);
      const replay = existingRecord(await store().claim(input));
      expect(replay).toMatchObject({
        state: 'TERMINAL_FAILURE',
        responseStatus: 400,
        responseBody: body,
      });
    });

    it('refuses a second completion: the record is no longer in progress', async () => {
      const input = claimInput();
      const record = claimedRecord(await store().claim(input));
      expect(await store().complete(record, storedResponse({ body: '"first"' }))).toBe(true);
      expect(await store().complete(record, storedResponse({ body: '"second"' }))).toBe(false);
      expect(await store().fail(record, storedResponse({ body: '"third"' }))).toBe(false);
      expect(await store().release(record, releaseWindows())).toBe(false);
      expect((await store().read(input))?.responseBody).toBe('"first"');
    });

    it.each([
      ['complete', 'a stale version', -1],
      ['complete', 'a future version', +1],
      ['fail', 'a stale version', -1],
      ['fail', 'a future version', +1],
      ['release', 'a stale version', -1],
      ['release', 'a future version', +1],
    ] as const)('fences %s with %s: false, nothing changed', async (write, _name, offset) => {
      const input = claimInput();
      const record = claimedRecord(await store().claim(input));
      const before = await store().read(input);
      const fence = { id: record.id, version: record.version + offset };
      const written =
        write === 'release'
          ? await store().release(fence, releaseWindows())
          : await store()[write](fence, storedResponse());
      expect(written).toBe(false);
      expect(stored(await store().read(input))).toEqual(stored(before));
    });

    it.each([[-1], [1.5], [Number.NaN]])(
      'refuses to release with a retention of %s ms, writing nothing',
      async (retentionMs) => {
        const input = claimInput();
        const record = claimedRecord(await store().claim(input));
        const before = await store().read(input);
        await expect(store().release(record, { retentionMs })).rejects.toBeInstanceOf(RangeError);
        expect(stored(await store().read(input))).toEqual(stored(before));
      },
    );

    it('lets the next claim take over a released key: version 2, attempt 2, same operation id', async () => {
      const input = claimInput();
      const first = claimedRecord(await store().claim(input));
      const week = 7 * 24 * 3600_000;
      expect(await store().release(first, releaseWindows(week))).toBe(true);
      const released = await store().read(input);
      expect(released).toMatchObject({
        state: 'RETRYABLE_FAILURE',
        leaseOwner: null,
        leaseExpiresAt: null,
      });
      // Kept the retention it was released with (the procedure's), not a fixed one.
      expect(released!.purgeAfter!.getTime() - released!.updatedAt.getTime()).toBe(week);
      const retry = claimedRecord(await store().claim({ ...input, owner: 'worker-b' }));
      expect(retry).toMatchObject({
        id: first.id,
        operationId: first.operationId,
        takeover: true,
        state: 'IN_PROGRESS',
        version: 2,
        attempts: 2,
        leaseOwner: 'worker-b',
        leaseExpired: false,
      });
      expect(await store().complete(first, storedResponse())).toBe(false);
      expect(await store().complete(retry, storedResponse())).toBe(true);
    });

    it('does not hand a released key to a request with another fingerprint', async () => {
      const input = claimInput();
      const first = claimedRecord(await store().claim(input));
      await store().release(first, releaseWindows());
      const other = existingRecord(await store().claim({ ...input, fingerprint: 'other' }));
      expect(other).toMatchObject({
        state: 'RETRYABLE_FAILURE',
        version: 1,
        fingerprint: input.fingerprint,
      });
    });
  });
}
