import type { ClaimInput } from '@idem/contract';
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

/** Cancellation through the versioned state machine, promised only before an irreversible step. */
export function cancelCases<TTx>(target: () => ConformanceTarget<TTx>): void {
  const { store, force } = conformanceHelpers(target);
  const claimed = async (overrides: Partial<ClaimInput> = {}) =>
    claimedRecord(await store().claim(claimInput(overrides)));

  describe('cancel', () => {
    const cancelResponse = storedResponse({
      status: 409,
      body: '{"code":"CANCELLED"}',
      replayWindowMs: 60_000,
      retentionMs: 120_000,
    });

    it("cancels work before any irreversible step; the worker's next write fails", async () => {
      const input = claimInput();
      const record = claimedRecord(await store().claim(input));
      const reserve = { steps: '{"reserve":"done"}', recoveryPoint: 'reserve', leaseMs: 30_000 };
      expect(await store().saveSteps(record, reserve)).toBe(true);
      expect(await store().cancel(record, cancelResponse)).toBe('cancelled');
      const cancelled = await store().readRecovery(input);
      expect(cancelled).toMatchObject({
        state: 'TERMINAL_FAILURE',
        version: 2,
        responseStatus: 409,
        responseBody: '{"code":"CANCELLED"}',
        leaseOwner: null,
        leaseExpiresAt: null,
      });
      const completedAt = cancelled!.completedAt!.getTime();
      expect(cancelled!.replayExpiresAt!.getTime() - completedAt).toBe(60_000);
      expect(cancelled!.purgeAfter!.getTime() - completedAt).toBe(120_000);

      const charge = { steps: '{"charge":"intent"}', recoveryPoint: 'charge:intent' };
      expect(
        await store().saveSteps(record, { ...charge, leaseMs: 30_000, irreversible: true }),
      ).toBe(false);
      expect(await store().complete(record, storedResponse())).toBe(false);
      expect(existingRecord(await store().claim(input))).toMatchObject({
        state: 'TERMINAL_FAILURE',
        responseBody: '{"code":"CANCELLED"}',
      });
      expect(await store().cancel(record, cancelResponse)).toBe('stale');
    });

    it('refuses once an irreversible step began: irreversible, nothing changed', async () => {
      const input = claimInput();
      const record = claimedRecord(await store().claim(input));
      const charge = { steps: '{"charge":"intent"}', recoveryPoint: 'charge:intent' };
      await store().saveSteps(record, { ...charge, leaseMs: 30_000, irreversible: true });
      const before = await store().readRecovery(input);
      expect(await store().cancel(record, cancelResponse)).toBe('irreversible');
      expect(stored(await store().readRecovery(input))).toEqual(stored(before));
      expect(await store().complete(record, storedResponse())).toBe(true);
    });

    it('cancels PENDING work', async () => {
      const record = await claimed();
      await force(record.id, { state: 'PENDING' });
      expect(await store().cancel(record, cancelResponse)).toBe('cancelled');
      expect(await store().findByOperationId(record.operationId)).toMatchObject({
        state: 'TERMINAL_FAILURE',
        version: 2,
      });
    });

    it.each([
      ['a stale version', 'stale-version'],
      ['a future version', 'future-version'],
      ['a completed record', 'completed'],
      ['an unknown outcome', 'unknown'],
    ] as const)('answers stale for %s, and changes nothing', async (_name, setup) => {
      const input = claimInput();
      const record = claimedRecord(await store().claim(input));
      if (setup === 'completed') await store().complete(record, storedResponse());
      if (setup === 'unknown') await store().markUnsettled(record, 'OUTCOME_UNKNOWN');
      const offset = { 'stale-version': -1, 'future-version': 1 } as Record<string, number>;
      const fence = { id: record.id, version: record.version + (offset[setup] ?? 0) };
      const before = await store().readRecovery(input);
      expect(await store().cancel(fence, cancelResponse)).toBe('stale');
      expect(stored(await store().readRecovery(input))).toEqual(stored(before));
    });
  });
}
