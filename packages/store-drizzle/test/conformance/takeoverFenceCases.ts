import { randomUUID } from 'node:crypto';
import type { ClaimInput, Fence } from '@idem/contract';
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

const LEASE = 10_000;
/** An external call's time limit in these cases. */
const CALL = 4_000;
/** The intent's lease: the call's time limit plus one lease. */
const INTENT_LEASE = CALL + LEASE;
/** No takeover before this, after the intent: the intent's lease plus the call's time limit. */
const SETTLED = INTENT_LEASE + CALL;

/**
 * The fence around external calls (see recoveryStatements.ts): the intent written right before a
 * call, `takeover_after`, and the poison cap. Database time is moved with shifted stores.
 */
export function takeoverFenceCases<TTx>(target: () => ConformanceTarget<TTx>): void {
  const { store, laterStore, surviving } = conformanceHelpers(target);
  const claim = async (overrides: Partial<ClaimInput> = {}) =>
    claimedRecord(await store().claim(claimInput({ leaseMs: LEASE, ...overrides })));
  const intent = (fence: Fence, at = store()) =>
    at.saveSteps(fence, {
      steps: '{"charge":{"status":"intent"}}',
      recoveryPoint: 'charge:intent',
      leaseMs: LEASE,
      irreversible: true,
      callTimeLimitMs: CALL,
    });
  const fenceOf = (record: { id: string; version: number }) => ({
    id: record.id,
    version: record.version,
  });

  describe('the intent before an external call', () => {
    it('extends the lease over the call and sets takeover_after to that lease end plus the time limit', async () => {
      const record = await claim();
      expect(await intent(record)).toBe(true);
      const read = (await store().findByOperationId(record.operationId))!;
      expect(read.leaseRemainingMs).toBeGreaterThan(INTENT_LEASE - 2_000);
      expect(read.leaseRemainingMs).toBeLessThanOrEqual(INTENT_LEASE);
      const gap = read.takeoverAfter!.getTime() - read.leaseExpiresAt!.getTime();
      expect(gap).toBe(CALL);
    });

    it('a stale worker, taken over while it waited before its call, gets false from the intent write: it must not call', async () => {
      const input = claimInput({ leaseMs: LEASE });
      const stale = claimedRecord(await store().claim(input));
      // Past the stale worker's lease: a retry of the same request takes the record over.
      const later = laterStore(LEASE + 1_000);
      const taken = claimedRecord(await later.claim(input));
      expect(taken.version).toBe(stale.version + 1);
      expect(await intent(stale)).toBe(false);
      expect(await intent(taken, later)).toBe(true);
    });

    it('no claim takes over while the call may be in flight: busy until takeover_after, then taken', async () => {
      const input = claimInput({ leaseMs: LEASE });
      const worker = claimedRecord(await store().claim(input));
      expect(await intent(worker)).toBe(true);
      // Past the intent's lease, but the call's time limit after it has not passed yet.
      const early = await laterStore(INTENT_LEASE + 1_000).claim(input);
      expect(early.kind).toBe('existing');
      expect(existingRecord(early)).toMatchObject({ state: 'IN_PROGRESS', version: 1 });
      const late = claimedRecord(await laterStore(SETTLED + 1_000).claim(input));
      expect(late).toMatchObject({ version: 2, takeovers: 1, takeover: true });
    });

    it('an unknown outcome keeps takeover_after: a claim is busy until then, and no completer takes it', async () => {
      const procedure = `payments.${randomUUID()}`;
      const input = claimInput({ leaseMs: LEASE, procedure, input: 'i' });
      const worker = claimedRecord(await store().claim(input));
      expect(await intent(worker)).toBe(true);
      expect(await store().markUnsettled(worker, 'OUTCOME_UNKNOWN')).toBe(true);
      const unknown = (await store().findByOperationId(worker.operationId))!;
      expect(unknown.state).toBe('OUTCOME_UNKNOWN');
      expect(unknown.takeoverAfter).not.toBeNull();

      expect(await store().claim(input)).toEqual({ kind: 'busy' });
      const options = { owner: 'c', leaseMs: LEASE, limit: 10, procedures: [procedure] };
      expect(await store().takeOverAbandoned(options)).toEqual([]);
      const [taken] = await laterStore(SETTLED + 1_000).takeOverAbandoned(options);
      expect(taken).toMatchObject({ id: worker.id, state: 'IN_PROGRESS', takeovers: 1 });
    });

    it("an operator's release keeps takeover_after: no claim takes the key over while the owner's call may be in flight", async () => {
      const input = claimInput({ leaseMs: LEASE });
      const worker = claimedRecord(await store().claim(input));
      expect(await intent(worker)).toBe(true);
      const { takeoverAfter } = (await store().findByOperationId(worker.operationId))!;
      const release = {
        state: 'RETRYABLE_FAILURE',
        ...releaseWindows(),
        actor: 'ops',
        note: 'released by hand right after the intent',
      } as const;
      expect(await store().resolve(worker, release)).toBe(true);
      const released = (await store().readRecovery(input))!;
      expect(released).toMatchObject({ state: 'RETRYABLE_FAILURE', version: 2, takeoverAfter });
      // At once, and past the intent's lease: the worker's call may still be in flight, and a new
      // owner's lookup would miss it and call again.
      for (const at of [store(), laterStore(INTENT_LEASE + 1_000)]) {
        expect(await at.claim(input)).toEqual({ kind: 'busy' });
      }
      expect(stored(await store().readRecovery(input))).toEqual(stored(released));
      // The call has landed or been aborted: the retry resumes at the intent (and looks it up).
      const retry = claimedRecord(await laterStore(SETTLED + 1_000).claim(input));
      expect(retry).toMatchObject({
        version: 3,
        takeover: true,
        takeovers: 0,
        recoveryPoint: 'charge:intent',
        steps: '{"charge":{"status":"intent"}}',
      });
    });

    it('no claim takes over a released key before takeover_after, whoever released it', async () => {
      const input = claimInput({ leaseMs: LEASE });
      const worker = claimedRecord(await store().claim(input));
      expect(await intent(worker)).toBe(true);
      // The owner's own release after an intent keeps takeover_after.
      expect(await store().release(worker, releaseWindows())).toBe(true);
      const released = (await store().readRecovery(input))!;
      expect(released.takeoverAfter).not.toBeNull();
      expect(await store().claim(input)).toEqual({ kind: 'busy' });
      expect(stored(await store().readRecovery(input))).toEqual(stored(released));
      const retry = claimedRecord(await laterStore(SETTLED + 1_000).claim(input));
      expect(retry).toMatchObject({ version: 2, takeover: true, recoveryPoint: 'charge:intent' });
    });

    it('a released key is not reaped before takeover_after, however short its retention', async () => {
      for (const how of ['owner', 'operator'] as const) {
        const worker = await claim();
        expect(await intent(worker)).toBe(true);
        const released =
          how === 'owner'
            ? await store().release(worker, { retentionMs: 1_000 })
            : await store().resolve(worker, {
                state: 'RETRYABLE_FAILURE',
                retentionMs: 1_000,
                actor: 'ops',
                note: 'released by hand right after the intent',
              });
        expect(released).toBe(true);
        // Past the retention, with the call possibly in flight: kept, intent and all.
        await laterStore(5_000).reap({ limit: 10_000 });
        expect(await surviving([worker.id])).toBe(1);
        // Past takeover_after (and the retention): reaped.
        await laterStore(SETTLED + 1_000).reap({ limit: 10_000 });
        expect(await surviving([worker.id])).toBe(0);
      }
    });

    it('recording the result clears takeover_after: the record is abandoned at its lease end again', async () => {
      const procedure = `payments.${randomUUID()}`;
      const worker = await claim({ procedure, input: 'i' });
      expect(await intent(worker)).toBe(true);
      expect(
        await store().saveSteps(worker, {
          steps: '{"charge":{"status":"done","result":"1"}}',
          recoveryPoint: 'charge',
          leaseMs: LEASE,
          callSettled: true,
        }),
      ).toBe(true);
      expect((await store().findByOperationId(worker.operationId))!.takeoverAfter).toBeNull();
      const options = { owner: 'c', leaseMs: LEASE, limit: 10, procedures: [procedure] };
      const taken = await laterStore(LEASE + 1_000).takeOverAbandoned(options);
      expect(taken.map((r) => r.id)).toEqual([worker.id]);
    });

    it('a heartbeat never shortens the lease an intent extended', async () => {
      const worker = await claim();
      expect(await intent(worker)).toBe(true);
      expect(await store().extendLease(worker, 1_000)).toBe(true);
      const read = (await store().findByOperationId(worker.operationId))!;
      expect(read.leaseRemainingMs).toBeGreaterThan(INTENT_LEASE - 2_000);
    });
  });

  describe('the poison cap', () => {
    it('a claim past maxTakeovers moves the record to NEEDS_RECONCILIATION with its reason', async () => {
      const input = claimInput({ leaseMs: LEASE, maxTakeovers: 2 });
      let shift = 0;
      let record = claimedRecord(await store().claim(input));
      for (const expected of [1, 2]) {
        shift += LEASE + 1_000;
        record = claimedRecord(await laterStore(shift).claim(input));
        expect(record).toMatchObject({ state: 'IN_PROGRESS', takeovers: expected });
      }
      shift += LEASE + 1_000;
      const capped = await laterStore(shift).claim(input);
      expect(capped).toMatchObject({ kind: 'existing', reconciled: 'takeover_limit' });
      expect(existingRecord(capped)).toMatchObject({
        state: 'NEEDS_RECONCILIATION',
        reconcileReason: 'takeover_limit',
        takeovers: 2,
        version: record.version + 1,
        leaseOwner: null,
      });
      // The last owner is fenced out, and nobody takes the record over again.
      expect(await store().complete(fenceOf(record), storedResponse())).toBe(false);
      const again = await laterStore(shift + 60_000).claim(input);
      expect(again.kind).toBe('existing');
      expect(existingRecord(again).state).toBe('NEEDS_RECONCILIATION');
    });

    it('released keys do not count; the completer applies the same cap in its takeover', async () => {
      const procedure = `payments.${randomUUID()}`;
      const input = claimInput({ leaseMs: LEASE, procedure, input: 'i', maxTakeovers: 1 });
      const first = claimedRecord(await store().claim(input));
      expect(await store().release(first, releaseWindows())).toBe(true);
      const reclaimed = claimedRecord(await store().claim(input));
      expect(reclaimed.takeovers).toBe(0);
      const options = {
        owner: 'c',
        leaseMs: LEASE,
        limit: 1,
        procedures: [procedure],
        maxTakeovers: 1,
      };
      const [taken] = await laterStore(LEASE + 1_000).takeOverAbandoned(options);
      expect(taken).toMatchObject({ state: 'IN_PROGRESS', takeovers: 1, leaseOwner: 'c' });
      const [capped] = await laterStore(3 * LEASE).takeOverAbandoned(options);
      expect(capped).toMatchObject({
        id: first.id,
        state: 'NEEDS_RECONCILIATION',
        reconcileReason: 'takeover_limit',
        leaseOwner: null,
      });
      expect(await laterStore(10 * LEASE).takeOverAbandoned(options)).toEqual([]);
      const stuck = await store().listStuck({ graceMs: 0, limit: 1_000 });
      expect(stuck.find((r) => r.id === first.id)?.reconcileReason).toBe('takeover_limit');
    });

    it('markUnsettled stores the reason of NEEDS_RECONCILIATION, and resolve clears it', async () => {
      const record = await claim();
      expect(await store().markUnsettled(record, 'NEEDS_RECONCILIATION', 'no_lookup')).toBe(true);
      const read = (await store().findByOperationId(record.operationId))!;
      expect(read.reconcileReason).toBe('no_lookup');
      expect(
        await store().resolve(fenceOf(read), {
          state: 'RETRYABLE_FAILURE',
          ...releaseWindows(),
          actor: 'ops',
          note: 'retry it',
        }),
      ).toBe(true);
      expect((await store().findByOperationId(record.operationId))!).toMatchObject({
        reconcileReason: null,
        takeovers: 0,
        takeoverAfter: null,
      });
    });
  });
}
