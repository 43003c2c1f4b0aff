import { randomUUID } from 'node:crypto';
import type { ClaimInput, RecordState, Resolution } from '@idem/contract';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import {
  claimedRecord,
  claimInput,
  conformanceHelpers,
  existingRecord,
  stored,
  storedResponse,
  type ConformanceTarget,
} from '../conformanceTarget.js';

const HOUR = 3_600_000;

/** Operator tools: lookups, manual resolution with its audit trail, erasure of a scope. */
export function operatorCases<TTx>(target: () => ConformanceTarget<TTx>): void {
  const { store, laterStore, force } = conformanceHelpers(target);
  const claimed = async (overrides: Partial<ClaimInput> = {}) =>
    claimedRecord(await store().claim(claimInput(overrides)));
  const confirmed = storedResponse({
    body: '{"charged":true}',
    replayWindowMs: 60_000,
    retentionMs: 120_000,
  });
  const resolution = (overrides: Partial<Resolution> = {}): Resolution => ({
    state: 'COMPLETED',
    response: confirmed,
    actor: 'ops:alice',
    note: 'charge ch_1 confirmed in the processor dashboard',
    ...overrides,
  });

  describe('findByOperationId', () => {
    it('finds a superseded row by its operation id, and the new live row by its own', async () => {
      const input = claimInput();
      const first = claimedRecord(await store().claim(input));
      await store().complete(first, storedResponse({ replayWindowMs: 1_000 }));
      const fresh = claimedRecord(await laterStore(2_000).claim(input));
      const old = await store().findByOperationId(first.operationId);
      expect(old).toMatchObject({ id: first.id, state: 'COMPLETED' });
      expect(old!.supersededAt).toBeInstanceOf(Date);
      expect(await store().findByOperationId(fresh.operationId)).toMatchObject({
        id: fresh.id,
        supersededAt: null,
      });
    });

    it.each([
      ['an unknown uuid', randomUUID()],
      ['a malformed id', 'not-a-uuid'],
      ['empty', ''],
    ])('finds nothing for %s', async (_name, operationId) => {
      expect(await store().findByOperationId(operationId)).toBeNull();
    });
  });

  describe('resolve', () => {
    it('resolves a record awaiting reconciliation and writes its audit row with it', async () => {
      const input = claimInput();
      const record = claimedRecord(await store().claim(input));
      await store().markUnsettled(record, 'NEEDS_RECONCILIATION');
      expect(await store().resolve(record, resolution())).toBe(true);
      const resolved = await store().readRecovery(input);
      expect(resolved).toMatchObject({
        state: 'COMPLETED',
        version: 2,
        responseStatus: 200,
        responseBody: '{"charged":true}',
        leaseOwner: null,
        leaseExpiresAt: null,
      });
      const completedAt = resolved!.completedAt!.getTime();
      expect(resolved!.replayExpiresAt!.getTime() - completedAt).toBe(60_000);
      expect(resolved!.purgeAfter!.getTime() - completedAt).toBe(120_000);
      expect(await store().listAudit(record.id)).toEqual([
        {
          id: expect.stringMatching(/^[1-9][0-9]*$/),
          recordId: record.id,
          operationId: record.operationId,
          actor: 'ops:alice',
          action: 'resolve',
          fromState: 'NEEDS_RECONCILIATION',
          toState: 'COMPLETED',
          fromVersion: 1,
          note: 'charge ch_1 confirmed in the processor dashboard',
          // The same statement, so the same database instant.
          at: resolved!.updatedAt,
        },
      ]);
      expect(existingRecord(await store().claim(input))).toMatchObject({
        state: 'COMPLETED',
        responseBody: '{"charged":true}',
      });
    });

    it.each<[RecordState]>([
      ['IN_PROGRESS'],
      ['PENDING'],
      ['OUTCOME_UNKNOWN'],
      ['NEEDS_RECONCILIATION'],
      ['RETRYABLE_FAILURE'],
    ])('resolves from %s (the operator decides, even over a live lease)', async (from) => {
      const record = await claimed({ leaseMs: HOUR });
      if (from === 'PENDING') await force(record.id, { state: 'PENDING' });
      if (from === 'OUTCOME_UNKNOWN' || from === 'NEEDS_RECONCILIATION') {
        await store().markUnsettled(record, from);
      }
      if (from === 'RETRYABLE_FAILURE') await store().release(record);
      const response = storedResponse({ status: 400, body: '{"code":"DECLINED"}' });
      const failed = resolution({ state: 'TERMINAL_FAILURE', response });
      expect(await store().resolve(record, failed)).toBe(true);
      expect(await store().findByOperationId(record.operationId)).toMatchObject({
        state: 'TERMINAL_FAILURE',
        version: 2,
        responseStatus: 400,
      });
      expect((await store().listAudit(record.id)).map((a) => a.fromState)).toEqual([from]);
      // An owner still running (IN_PROGRESS) has lost the record.
      expect(await store().complete(record, storedResponse())).toBe(false);
    });

    it('resolves to RETRYABLE_FAILURE: the key is released and the next claim runs again', async () => {
      const input = claimInput();
      const record = claimedRecord(await store().claim(input));
      await store().markUnsettled(record, 'OUTCOME_UNKNOWN');
      const release = resolution({ state: 'RETRYABLE_FAILURE', response: undefined });
      expect(await store().resolve(record, release)).toBe(true);
      const released = await store().readRecovery(input);
      expect(released).toMatchObject({
        state: 'RETRYABLE_FAILURE',
        version: 2,
        responseBody: null,
        completedAt: null,
        leaseOwner: null,
      });
      expect(released!.purgeAfter!.getTime() - released!.updatedAt.getTime()).toBe(72 * HOUR);
      const retry = claimedRecord(await store().claim({ ...input, owner: 'worker-b' }));
      expect(retry).toMatchObject({ takeover: true, version: 3, attempts: 2, purgeAfter: null });
    });

    it.each([
      ['a stale version', -1, 'NEEDS_RECONCILIATION'],
      ['a future version', +1, 'NEEDS_RECONCILIATION'],
      ['a completed record', 0, 'COMPLETED'],
      ['a terminally failed record', 0, 'TERMINAL_FAILURE'],
    ] as const)('refuses %s: false, nothing changed, no audit row', async (_n, offset, state) => {
      const input = claimInput();
      const record = claimedRecord(await store().claim(input));
      if (state === 'NEEDS_RECONCILIATION') await store().markUnsettled(record, state);
      if (state === 'COMPLETED') await store().complete(record, storedResponse());
      if (state === 'TERMINAL_FAILURE') await store().fail(record, storedResponse());
      const before = await store().readRecovery(input);
      const fence = { id: record.id, version: record.version + offset };
      expect(await store().resolve(fence, resolution())).toBe(false);
      expect(stored(await store().readRecovery(input))).toEqual(stored(before));
      expect(await store().listAudit(record.id)).toEqual([]);
    });

    it.each([
      ['COMPLETED without a response', { response: undefined }],
      ['TERMINAL_FAILURE without a response', { state: 'TERMINAL_FAILURE', response: undefined }],
      ['RETRYABLE_FAILURE with a response', { state: 'RETRYABLE_FAILURE' }],
      ['no actor', { actor: ' ' }],
      ['another state', { state: 'IN_PROGRESS' }],
    ] as const)('refuses a resolution to %s before writing', async (_name, overrides) => {
      const input = claimInput();
      const record = claimedRecord(await store().claim(input));
      await store().markUnsettled(record, 'NEEDS_RECONCILIATION');
      const wrong = resolution(overrides as Partial<Resolution>);
      await expect(store().resolve(record, wrong)).rejects.toBeInstanceOf(TypeError);
      expect(await store().read(input)).toMatchObject({ state: 'NEEDS_RECONCILIATION' });
      expect(await store().listAudit(record.id)).toEqual([]);
    });

    it('lists audit rows oldest first, and keeps them after the record is deleted', async () => {
      const record = await claimed();
      await store().markUnsettled(record, 'OUTCOME_UNKNOWN');
      const release = resolution({ state: 'RETRYABLE_FAILURE', response: undefined });
      expect(await store().resolve(record, release)).toBe(true);
      expect(await store().resolve({ ...record, version: 2 }, resolution())).toBe(true);
      await target().rows(sql`DELETE FROM idem_records WHERE id = ${record.id}::bigint`);
      const audit = await store().listAudit(record.id);
      expect(audit.map((a) => [a.fromState, a.toState, a.fromVersion])).toEqual([
        ['OUTCOME_UNKNOWN', 'RETRYABLE_FAILURE', 1],
        ['RETRYABLE_FAILURE', 'COMPLETED', 2],
      ]);
      expect(await store().listAudit('999999999999')).toEqual([]);
      await expect(store().listAudit('1; drop')).rejects.toBeInstanceOf(TypeError);
    });
  });

  describe('eraseScope', () => {
    it("clears a scope's responses, inputs and steps, and keeps de-duplication", async () => {
      const scope = `acct_${randomUUID()}:live`;
      const completedInput = claimInput({ scope, input: 'card=tok_1' });
      const completed = claimedRecord(await store().claim(completedInput));
      const charge = { steps: '{"charge":"ch_1"}', recoveryPoint: 'charge', leaseMs: 30_000 };
      await store().saveSteps(completed, charge);
      await store().complete(completed, storedResponse({ body: '{"order":"ord_1"}' }));
      const supersededInput = claimInput({ scope, input: 'card=tok_2' });
      const superseded = claimedRecord(await store().claim(supersededInput));
      await store().complete(superseded, storedResponse({ replayWindowMs: 1_000 }));
      const successor = claimedRecord(await laterStore(2_000).claim(supersededInput));
      const otherInput = claimInput({ input: 'card=tok_3' });
      const other = claimedRecord(await store().claim(otherInput));
      await store().complete(other, storedResponse());
      const before = await store().readRecovery(completedInput);
      const otherBefore = await store().readRecovery(otherInput);

      expect(await store().eraseScope(scope)).toBe(3);
      const erased = await store().readRecovery(completedInput);
      expect(erased).toMatchObject({
        id: completed.id,
        state: 'COMPLETED',
        responseStatus: 200,
        responseBody: null,
        inputText: null,
        steps: null,
        recoveryPoint: 'charge',
        keyHash: completedInput.keyHash,
        fingerprint: completedInput.fingerprint,
        operationId: completed.operationId,
        updatedAt: before!.updatedAt,
      });
      expect(erased!.erasedAt).toBeInstanceOf(Date);
      // A late retry is still recognised: answered from the record, never run again.
      expect(existingRecord(await store().claim(completedInput))).toMatchObject({
        id: completed.id,
        state: 'COMPLETED',
        responseBody: null,
      });
      const mismatch = existingRecord(
        await store().claim({ ...completedInput, fingerprint: 'other' }),
      );
      expect(mismatch.fingerprint).toBe(completedInput.fingerprint);
      for (const record of [superseded, successor]) {
        expect(await store().findByOperationId(record.operationId)).toMatchObject({
          responseBody: null,
          inputText: null,
          erasedAt: expect.any(Date),
        });
      }
      expect(stored(await store().readRecovery(otherInput))).toEqual(stored(otherBefore));

      expect(await store().eraseScope(scope)).toBe(0);
      expect(await store().eraseScope(`acct_${randomUUID()}:live`)).toBe(0);
    });

    it('erases a record again when it was written to after an erasure', async () => {
      const scope = `acct_${randomUUID()}:live`;
      const record = await claimed({ scope, input: 'card=tok_1' });
      expect(await store().eraseScope(scope)).toBe(1);
      await store().complete(record, storedResponse({ body: '{"order":"ord_2"}' }));
      expect(await store().eraseScope(scope)).toBe(1);
      expect(await store().findByOperationId(record.operationId)).toMatchObject({
        state: 'COMPLETED',
        responseBody: null,
      });
    });
  });
}
