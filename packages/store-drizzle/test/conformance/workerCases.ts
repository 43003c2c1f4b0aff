import { randomUUID } from 'node:crypto';
import type { ClaimInput, StuckReport } from '@idem/contract';
import { describe, expect, it } from 'vitest';
import {
  claimedRecord,
  claimInput,
  conformanceHelpers,
  releaseWindows,
  storedResponse,
  type ConformanceTarget,
} from '../conformanceTarget.js';

const HOUR = 3_600_000;
/** A procedure's retention longer than the contract's default (72 h), as a released key's. */
const RELEASE_RETENTION_MS = 7 * 24 * HOUR;

/** The background workers: the completer's takeover, the reaper, the stuck report. */
export function workerCases<TTx>(target: () => ConformanceTarget<TTx>): void {
  const { store, laterStore, force, surviving } = conformanceHelpers(target);
  const claimed = async (overrides: Partial<ClaimInput> = {}) =>
    claimedRecord(await store().claim(claimInput(overrides)));
  /**
   * Deletes every reapable row of the suite's database (a reaper a century ahead), so that a test
   * can count what the reaper deletes of its own rows.
   */
  const reapEverything = async () => {
    const far = laterStore(100 * 365 * 24 * HOUR);
    while ((await far.reap({ limit: 10_000 })) > 0);
  };
  const delta = (after: StuckReport, before: StuckReport): StuckReport => ({
    abandoned: after.abandoned - before.abandoned,
    pendingTooLong: after.pendingTooLong - before.pendingTooLong,
    outcomeUnknown: after.outcomeUnknown - before.outcomeUnknown,
    needsReconciliation: after.needsReconciliation - before.needsReconciliation,
  });

  describe('takeOverAbandoned (the completer)', () => {
    it('takes only expired IN_PROGRESS and OUTCOME_UNKNOWN records of the listed procedures', async () => {
      const procedure = `payments.${randomUUID()}`;
      const mine = (overrides: Partial<ClaimInput> = {}) =>
        claimed({ procedure, leaseMs: 5_000, ...overrides });
      const expired = await mine({ input: 'expired' });
      const live = await mine({ leaseMs: 3_600_000 });
      const unknown = await mine();
      await store().markUnsettled(unknown, 'OUTCOME_UNKNOWN');
      const reconcile = await mine();
      await store().markUnsettled(reconcile, 'NEEDS_RECONCILIATION');
      const completed = await mine();
      await store().complete(completed, storedResponse());
      const released = await mine();
      await store().release(released, releaseWindows());
      const pending = await mine();
      await force(pending.id, { state: 'PENDING' });
      const superseded = await mine();
      await force(superseded.id, { superseded: true });
      const unlisted = await claimed({ procedure: `emails.${randomUUID()}`, leaseMs: 5_000 });

      const completer = laterStore(60_000);
      const options = {
        owner: 'completer-1',
        leaseMs: 30_000,
        limit: 100,
        procedures: [procedure, `other.${randomUUID()}`],
      };
      const taken = await completer.takeOverAbandoned(options);
      expect(taken.map((r) => r.id).sort()).toEqual([expired.id, unknown.id].sort());
      for (const record of taken) {
        expect(record).toMatchObject({
          state: 'IN_PROGRESS',
          version: 2,
          attempts: 2,
          leaseOwner: 'completer-1',
          leaseExpired: false,
          purgeAfter: null,
        });
        expect(record.leaseRemainingMs).toBeGreaterThan(25_000);
        expect(record.leaseRemainingMs).toBeLessThanOrEqual(30_000);
      }
      expect(taken.find((r) => r.id === expired.id)!.inputText).toBe('expired');
      expect(await store().complete(expired, storedResponse())).toBe(false);
      expect(await completer.takeOverAbandoned(options)).toEqual([]);

      const untouched = [live, reconcile, completed, released, pending, superseded];
      for (const record of untouched) {
        expect((await store().findByOperationId(record.operationId))!.version).toBe(1);
      }
      expect(await store().findByOperationId(unlisted.operationId)).toMatchObject({
        state: 'IN_PROGRESS',
        version: 1,
        leaseOwner: 'worker-a',
      });
    });
  });

  describe('reap', () => {
    it('deletes reapable records past their cleanup time, by database time, and nothing else', async () => {
      await reapEverything();
      const windows = { replayWindowMs: 30_000, retentionMs: 60_000 };
      const completed = await claimed();
      await store().complete(completed, storedResponse(windows));
      const failed = await claimed();
      await store().fail(failed, storedResponse({ status: 400, ...windows }));
      const supersededInput = claimInput();
      const superseded = claimedRecord(await store().claim(supersededInput));
      await store().complete(
        superseded,
        storedResponse({ replayWindowMs: 1_000, retentionMs: 60_000 }),
      );
      const successor = claimedRecord(await laterStore(2_000).claim(supersededInput));
      const released = await claimed();
      await store().release(released, releaseWindows(RELEASE_RETENTION_MS));

      // Never reapable, however old their cleanup time.
      const inProgress = await claimed({ leaseMs: 1_000 });
      const pending = await claimed();
      await force(pending.id, { state: 'PENDING' });
      const unknown = await claimed();
      await store().markUnsettled(unknown, 'OUTCOME_UNKNOWN');
      const reconcile = await claimed();
      await store().markUnsettled(reconcile, 'NEEDS_RECONCILIATION');
      const kept = [inProgress, pending, unknown, reconcile];
      for (const record of kept) await force(record.id, { purgeAfter: '2000-01-01T00:00:00Z' });

      expect(await laterStore(59_000).reap({ limit: 100 })).toBe(0);
      expect(await laterStore(61_000).reap({ limit: 100 })).toBe(3);
      expect(await surviving([completed.id, failed.id, superseded.id])).toBe(0);
      expect(await laterStore(RELEASE_RETENTION_MS - 1_000).reap({ limit: 100 })).toBe(0);
      expect(await laterStore(RELEASE_RETENTION_MS + 1_000).reap({ limit: 100 })).toBe(1);
      expect(await surviving([released.id])).toBe(0);

      await reapEverything();
      const keptIds = [...kept.map((r) => r.id), successor.id];
      expect(await surviving(keptIds)).toBe(keptIds.length);
    });
  });

  describe('stuckReport and listStuck', () => {
    /** One record of each kind; `at` is 120 s ahead, `graceMs` 60 s. */
    async function stuckRecords() {
      const pending = await claimed();
      await force(pending.id, { state: 'PENDING' });
      const abandoned = await claimed({ leaseMs: 5_000 });
      const unknown = await claimed();
      await store().markUnsettled(unknown, 'OUTCOME_UNKNOWN');
      const reconcile = await claimed();
      await store().markUnsettled(reconcile, 'NEEDS_RECONCILIATION');
      // Expired at +90 s, within the grace at +120 s; live; settled.
      const recentlyExpired = await claimed({ leaseMs: 90_000 });
      const live = await claimed({ leaseMs: HOUR });
      const completed = await claimed();
      await store().complete(completed, storedResponse());
      const released = await claimed();
      await store().release(released, releaseWindows());
      return {
        stuck: [pending, unknown, reconcile, abandoned],
        fine: [recentlyExpired, live, completed, released],
      };
    }

    it('counts each class by database time, with the grace', async () => {
      const at = laterStore(120_000);
      const before = await at.stuckReport({ graceMs: 60_000 });
      const beforeNow = await store().stuckReport({ graceMs: 10 * 365 * 24 * HOUR });
      await stuckRecords();
      expect(delta(await at.stuckReport({ graceMs: 60_000 }), before)).toEqual({
        abandoned: 1,
        pendingTooLong: 1,
        outcomeUnknown: 1,
        needsReconciliation: 1,
      });
      expect(
        delta(await store().stuckReport({ graceMs: 10 * 365 * 24 * HOUR }), beforeNow),
      ).toEqual({ abandoned: 0, pendingTooLong: 0, outcomeUnknown: 1, needsReconciliation: 1 });
    });

    it('lists the same records, oldest first, at most `limit`', async () => {
      const { stuck, fine } = await stuckRecords();
      const at = laterStore(120_000);
      const listed = await at.listStuck({ graceMs: 60_000, limit: 100_000 });
      const ids = new Set([...stuck, ...fine].map((r) => r.id));
      // PENDING and the unsettled ones by their last change; the abandoned one by its lease expiry.
      expect(listed.filter((r) => ids.has(r.id)).map((r) => r.id)).toEqual(stuck.map((r) => r.id));
      expect(listed.find((r) => r.id === stuck[1]!.id)).toMatchObject({
        state: 'OUTCOME_UNKNOWN',
        steps: null,
        inputText: null,
      });
      expect(await at.listStuck({ graceMs: 60_000, limit: 2 })).toHaveLength(2);
      await expect(at.stuckReport({ graceMs: -1 })).rejects.toBeInstanceOf(RangeError);
    });
  });
}
