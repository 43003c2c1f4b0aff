import type { ClaimInput } from '@idem/contract';
import { describe, expect, it } from 'vitest';
import {
  claimedRecord,
  claimInput,
  conformanceHelpers,
  existingRecord,
  releaseWindows,
  Rollback,
  stored,
  storedResponse,
  type ConformanceTarget,
} from '../conformanceTarget.js';

/** Phased work: stored input, steps, heartbeats, unsettled outcomes and the completer. */
export function recoveryCases<TTx>(target: () => ConformanceTarget<TTx>): void {
  const { store, laterStore } = conformanceHelpers(target);
  const claimed = async (overrides: Partial<ClaimInput> = {}) =>
    claimedRecord(await store().claim(claimInput(overrides)));

  describe('recovery fields', () => {
    it('a fresh claim stores its input, and every read hands out the recovery fields', async () => {
      const input = claimInput({ input: '{"amount":100}' });
      const record = claimedRecord(await store().claim(input));
      const fields = {
        inputText: '{"amount":100}',
        steps: null,
        irreversibleAt: null,
        erasedAt: null,
        supersededAt: null,
      };
      expect(record).toMatchObject(fields);
      expect(existingRecord(await store().claim(input))).toMatchObject(fields);
      expect(await store().read(input)).toMatchObject(fields);
      expect(await store().readRecovery(input)).toMatchObject(fields);
      expect(await store().findByOperationId(record.operationId)).toMatchObject({
        id: record.id,
        ...fields,
      });
    });

    it('a claim without input stores none', async () => {
      expect(await claimed()).toMatchObject({ inputText: null });
    });

    it('a takeover keeps the input of the first claim: a retry never overwrites it', async () => {
      const input = claimInput({ input: 'first' });
      const first = claimedRecord(await store().claim(input));
      await store().release(first, releaseWindows());
      const retry = claimedRecord(await store().claim({ ...input, input: 'second' }));
      expect(retry).toMatchObject({ takeover: true, version: 2, inputText: 'first' });
    });
  });

  describe('saveSteps and extendLease', () => {
    it('commits the steps and recovery point and extends the lease by database time', async () => {
      const input = claimInput({ leaseMs: 5_000 });
      const record = claimedRecord(await store().claim(input));
      const later = laterStore(4_000);
      const update = { steps: '{"reserve":"done"}', recoveryPoint: 'reserve', leaseMs: 30_000 };
      expect(await later.saveSteps(record, update)).toBe(true);
      const saved = await later.readRecovery(input);
      expect(saved).toMatchObject({
        state: 'IN_PROGRESS',
        version: 1,
        steps: '{"reserve":"done"}',
        recoveryPoint: 'reserve',
        irreversibleAt: null,
        leaseExpired: false,
      });
      expect(saved!.leaseExpiresAt!.getTime() - saved!.updatedAt.getTime()).toBe(30_000);
      expect(saved!.leaseRemainingMs).toBeGreaterThan(25_000);
      expect(saved!.leaseRemainingMs).toBeLessThanOrEqual(30_000);
      // The claim's own lease ended at +5s; the extended one still holds at +10s.
      expect(existingRecord(await laterStore(10_000).claim(input))).toMatchObject({
        version: 1,
        leaseExpired: false,
      });
    });

    it('stamps irreversibleAt once: later saves keep the first instant', async () => {
      const input = claimInput();
      const record = claimedRecord(await store().claim(input));
      const intent = { steps: '{"charge":"intent"}', recoveryPoint: 'charge:intent' };
      expect(
        await store().saveSteps(record, { ...intent, leaseMs: 30_000, irreversible: true }),
      ).toBe(true);
      const first = await store().readRecovery(input);
      expect(first!.irreversibleAt!.getTime()).toBe(first!.updatedAt.getTime());
      const done = { steps: '{"charge":"done"}', recoveryPoint: 'charge', leaseMs: 30_000 };
      expect(await laterStore(1_000).saveSteps(record, { ...done, irreversible: true })).toBe(true);
      expect(await laterStore(2_000).saveSteps(record, done)).toBe(true);
      const last = await store().readRecovery(input);
      expect(last).toMatchObject({ steps: '{"charge":"done"}', recoveryPoint: 'charge' });
      expect(last!.irreversibleAt).toEqual(first!.irreversibleAt);
    });

    it.each([
      ['a stale version', -1],
      ['a future version', +1],
    ])('fences saveSteps and extendLease with %s: false, nothing changed', async (_n, offset) => {
      const input = claimInput();
      const record = claimedRecord(await store().claim(input));
      await store().saveSteps(record, { steps: '"mine"', recoveryPoint: 'a', leaseMs: 30_000 });
      const before = await store().readRecovery(input);
      const fence = { id: record.id, version: record.version + offset };
      const update = { steps: '"other"', recoveryPoint: 'b', leaseMs: 60_000, irreversible: true };
      expect(await store().saveSteps(fence, update)).toBe(false);
      expect(await store().extendLease(fence, 60_000)).toBe(false);
      expect(stored(await store().readRecovery(input))).toEqual(stored(before));
    });

    it('saveSteps in a transaction that rolls back leaves the steps as they were', async () => {
      const input = claimInput();
      const record = claimedRecord(await store().claim(input));
      const s = store();
      await expect(
        s.transaction(async (tx) => {
          const update = { steps: '"phase"', recoveryPoint: 'phase', leaseMs: 30_000 };
          expect(await s.saveSteps(record, update, tx)).toBe(true);
          throw new Rollback();
        }),
      ).rejects.toBeInstanceOf(Rollback);
      expect(await s.readRecovery(input)).toMatchObject({ steps: null, recoveryPoint: null });
    });

    it("a stale worker's late saveSteps after a takeover changes nothing", async () => {
      const input = claimInput({ leaseMs: 5_000, owner: 'worker-a' });
      const a = claimedRecord(await store().claim(input));
      const later = laterStore(10_000);
      const b = claimedRecord(await later.claim({ ...input, owner: 'worker-b' }));
      expect(b).toMatchObject({ takeover: true, version: 2 });
      expect(await later.saveSteps(b, { steps: '"b"', recoveryPoint: 'b', leaseMs: 5_000 })).toBe(
        true,
      );
      const late = { steps: '"a"', recoveryPoint: 'a', leaseMs: 60_000, irreversible: true };
      expect(await store().saveSteps(a, late)).toBe(false);
      expect(await store().extendLease(a, 60_000)).toBe(false);
      expect(await later.readRecovery(input)).toMatchObject({
        steps: '"b"',
        recoveryPoint: 'b',
        irreversibleAt: null,
        version: 2,
        leaseOwner: 'worker-b',
      });
    });

    it("extendLease: the owner's heartbeat keeps the lease from running out", async () => {
      const input = claimInput({ leaseMs: 5_000 });
      const record = claimedRecord(await store().claim(input));
      expect(await laterStore(4_000).extendLease(record, 10_000)).toBe(true);
      const at10s = existingRecord(await laterStore(10_000).claim(input));
      expect(at10s).toMatchObject({ version: 1, leaseExpired: false });
      expect(at10s.leaseRemainingMs).toBeGreaterThan(3_000);
      expect(at10s.leaseRemainingMs).toBeLessThanOrEqual(4_000);
      await expect(store().extendLease(record, 0)).rejects.toBeInstanceOf(RangeError);
    });

    it('refuses saveSteps and extendLease once the record left IN_PROGRESS', async () => {
      const record = await claimed();
      await store().complete(record, storedResponse());
      const update = { steps: '"late"', recoveryPoint: 'late', leaseMs: 30_000 };
      expect(await store().saveSteps(record, update)).toBe(false);
      expect(await store().extendLease(record, 30_000)).toBe(false);
    });
  });

  describe('markUnsettled', () => {
    it('OUTCOME_UNKNOWN: the lease is dropped; the same request takes it over with its steps', async () => {
      const input = claimInput({ input: 'card=tok_1', owner: 'worker-a' });
      const a = claimedRecord(await store().claim(input));
      const intent = { steps: '{"charge":"intent"}', recoveryPoint: 'charge:intent' };
      await store().saveSteps(a, { ...intent, leaseMs: 30_000, irreversible: true });
      expect(await store().markUnsettled(a, 'OUTCOME_UNKNOWN')).toBe(true);
      expect(await store().readRecovery(input)).toMatchObject({
        state: 'OUTCOME_UNKNOWN',
        version: 1,
        leaseOwner: null,
        leaseExpiresAt: null,
        purgeAfter: null,
      });
      const other = existingRecord(await store().claim({ ...input, fingerprint: 'other' }));
      expect(other).toMatchObject({ state: 'OUTCOME_UNKNOWN', version: 1 });

      const b = claimedRecord(await store().claim({ ...input, owner: 'worker-b' }));
      expect(b).toMatchObject({
        takeover: true,
        state: 'IN_PROGRESS',
        version: 2,
        attempts: 2,
        leaseOwner: 'worker-b',
        operationId: a.operationId,
        inputText: 'card=tok_1',
        ...intent,
      });
      expect(b.irreversibleAt).toBeInstanceOf(Date);
      expect(await store().complete(a, storedResponse())).toBe(false);
    });

    it('NEEDS_RECONCILIATION: the same request gets the existing record, even a year later', async () => {
      const input = claimInput();
      const record = claimedRecord(await store().claim(input));
      expect(await store().markUnsettled(record, 'NEEDS_RECONCILIATION')).toBe(true);
      const answer = existingRecord(await laterStore(365 * 24 * 3_600_000).claim(input));
      expect(answer).toMatchObject({ state: 'NEEDS_RECONCILIATION', version: 1, leaseOwner: null });
    });

    it('is fenced: a stale version, or a record no longer in progress, gets false', async () => {
      const input = claimInput();
      const record = claimedRecord(await store().claim(input));
      const stale = { id: record.id, version: record.version - 1 };
      expect(await store().markUnsettled(stale, 'OUTCOME_UNKNOWN')).toBe(false);
      await store().complete(record, storedResponse());
      expect(await store().markUnsettled(record, 'NEEDS_RECONCILIATION')).toBe(false);
      expect(await store().read(input)).toMatchObject({ state: 'COMPLETED' });
    });

    it('refuses a state other than the two unsettled ones', async () => {
      const record = await claimed();
      const state = 'COMPLETED' as 'OUTCOME_UNKNOWN';
      await expect(store().markUnsettled(record, state)).rejects.toBeInstanceOf(TypeError);
    });
  });
}
