import { randomUUID } from 'node:crypto';
import type { ClaimInput, RecordState, Resolution, StoredResponse } from '@idem/contract';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import {
  claimedRecord,
  claimInput,
  conformanceHelpers,
  existingRecord,
  releaseWindows,
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
  type Settling = Extract<Resolution, { response: StoredResponse }>;
  const resolution = (overrides: Partial<Settling> = {}): Settling => ({
    state: 'COMPLETED',
    response: confirmed,
    actor: 'ops:alice',
    note: 'charge ch_1 confirmed in the processor dashboard',
    ...overrides,
  });
  /** A release kept 5 hours: the procedure's retention, not the contract's default. */
  const releasing = (retentionMs = 5 * HOUR): Resolution => ({
    state: 'RETRYABLE_FAILURE',
    retentionMs,
    actor: 'ops:alice',
    note: 'the processor confirms nothing happened',
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
      if (from === 'RETRYABLE_FAILURE') await store().release(record, releaseWindows());
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

    it('resolves to RETRYABLE_FAILURE: the key is released, kept for the retention given, and the next claim runs again', async () => {
      const input = claimInput();
      const record = claimedRecord(await store().claim(input));
      await store().markUnsettled(record, 'OUTCOME_UNKNOWN');
      expect(await store().resolve(record, releasing(5 * HOUR))).toBe(true);
      const released = await store().readRecovery(input);
      expect(released).toMatchObject({
        state: 'RETRYABLE_FAILURE',
        version: 2,
        responseBody: null,
        completedAt: null,
        leaseOwner: null,
      });
      expect(released!.purgeAfter!.getTime() - released!.updatedAt.getTime()).toBe(5 * HOUR);
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
      ['RETRYABLE_FAILURE with a response', { state: 'RETRYABLE_FAILURE', retentionMs: HOUR }],
      [
        'RETRYABLE_FAILURE without a retention',
        { state: 'RETRYABLE_FAILURE', response: undefined },
      ],
      ['no actor', { actor: ' ' }],
      ['another state', { state: 'IN_PROGRESS' }],
    ] as const)('refuses a resolution to %s before writing', async (_name, overrides) => {
      const input = claimInput();
      const record = claimedRecord(await store().claim(input));
      await store().markUnsettled(record, 'NEEDS_RECONCILIATION');
      // Shapes the type refuses, as a caller without types (or with a cast) could send them.
      const wrong = { ...resolution(), ...overrides } as unknown as Resolution;
      await expect(store().resolve(record, wrong)).rejects.toBeInstanceOf(TypeError);
      expect(await store().read(input)).toMatchObject({ state: 'NEEDS_RECONCILIATION' });
      expect(await store().listAudit(record.id)).toEqual([]);
    });

    it('a resolution without the windows its state needs does not compile', () => {
      // @ts-expect-error RETRYABLE_FAILURE without retentionMs: there is no default
      const release: Resolution = { state: 'RETRYABLE_FAILURE', actor: 'ops', note: 'n' };
      // @ts-expect-error COMPLETED without a response (which carries its windows)
      const completed: Resolution = { state: 'COMPLETED', actor: 'ops', note: 'n' };
      expect([release, completed]).toHaveLength(2);
    });

    it.each([[-1], [1.5], [Number.NaN]])(
      'refuses a release kept %s milliseconds before writing',
      async (retentionMs) => {
        const record = await claimed();
        await store().markUnsettled(record, 'OUTCOME_UNKNOWN');
        await expect(store().resolve(record, releasing(retentionMs))).rejects.toBeInstanceOf(
          RangeError,
        );
        expect(await store().listAudit(record.id)).toEqual([]);
      },
    );

    it('lists audit rows oldest first, and keeps them after the record is deleted', async () => {
      const record = await claimed();
      await store().markUnsettled(record, 'OUTCOME_UNKNOWN');
      expect(await store().resolve(record, releasing())).toBe(true);
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

    it.each([
      ['complete', 'COMPLETED', 200],
      ['fail', 'TERMINAL_FAILURE', 400],
    ] as const)(
      'an owner running through an erasure settles the record (%s) but writes no data back',
      async (write, state, status) => {
        const scope = `acct_${randomUUID()}:live`;
        const input = claimInput({ scope, input: 'card=tok_1' });
        const record = claimedRecord(await store().claim(input));
        expect(await store().eraseScope(scope)).toBe(1);
        const erasedAt = (await store().readRecovery(input))!.erasedAt;
        const charge = { steps: '{"charge":"ch_1"}', recoveryPoint: 'charge', leaseMs: 30_000 };
        expect(await store().saveSteps(record, charge)).toBe(true);
        expect(await store().readRecovery(input)).toMatchObject({
          state: 'IN_PROGRESS',
          version: 1,
          recoveryPoint: 'charge',
          steps: null,
          inputText: null,
          erasedAt,
        });
        const response = storedResponse({ status, body: '{"order":"ord_2"}' });
        expect(await store()[write](record, response)).toBe(true);
        const settled = await store().findByOperationId(record.operationId);
        expect(settled).toMatchObject({
          state,
          version: 1,
          leaseOwner: null,
          responseStatus: status,
          responseBody: null,
          steps: null,
          inputText: null,
          erasedAt,
        });
        expect(settled!.replayExpiresAt).toBeInstanceOf(Date);
        // A late retry is answered from the record, with nothing to replay; nothing to erase.
        expect(existingRecord(await store().claim(input))).toMatchObject({
          state,
          responseBody: null,
        });
        expect(await store().eraseScope(scope)).toBe(0);
      },
    );

    it('a released record whose owner began a call after the erasure keeps the intent, not the steps', async () => {
      const scope = `acct_${randomUUID()}:live`;
      const input = claimInput({ scope, input: 'card=tok_1' });
      const record = claimedRecord(await store().claim(input));
      expect(await store().eraseScope(scope)).toBe(1);
      const step = { recoveryPoint: 'charge', leaseMs: 30_000 };
      const intent = { ...step, steps: '{"charge":"intent"}', irreversible: true };
      expect(await store().saveSteps(record, { ...intent, callTimeLimitMs: 10_000 })).toBe(true);
      const done = { ...step, steps: '{"charge":"ch_1"}', callSettled: true };
      expect(await store().saveSteps(record, done)).toBe(true);
      expect(await store().release(record, releaseWindows())).toBe(true);
      // What the retry sees: a call began (irreversibleAt) and no record of it (the server hands
      // such a record to an operator, reason erased_after_call, rather than call again).
      expect(claimedRecord(await store().claim(input))).toMatchObject({
        takeover: true,
        version: 2,
        steps: null,
        inputText: null,
        irreversibleAt: expect.any(Date),
        erasedAt: expect.any(Date),
      });
    });

    it("erases again what an operator's resolve stored after an erasure", async () => {
      const scope = `acct_${randomUUID()}:live`;
      const record = await claimed({ scope, input: 'card=tok_1' });
      await store().markUnsettled(record, 'NEEDS_RECONCILIATION');
      expect(await store().eraseScope(scope)).toBe(1);
      expect(await store().resolve(record, resolution())).toBe(true);
      // The operator's answer, given with the record in view, is stored...
      expect(await store().findByOperationId(record.operationId)).toMatchObject({
        state: 'COMPLETED',
        responseBody: confirmed.body,
      });
      // ... and the next erasure clears it.
      expect(await store().eraseScope(scope)).toBe(1);
      expect(await store().findByOperationId(record.operationId)).toMatchObject({
        state: 'COMPLETED',
        responseBody: null,
      });
    });
  });
}
