import type { ClaimInput } from '@idem/contract';
import { describe, expect, it } from 'vitest';
import {
  claimedRecord,
  claimInput,
  conformanceHelpers,
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

    it('cancels PENDING work', async () => {
      const record = await claimed();
      await force(record.id, { state: 'PENDING' });
      expect(await store().cancel(record, cancelResponse)).toBe('cancelled');
      expect(await store().findByOperationId(record.operationId)).toMatchObject({
        state: 'TERMINAL_FAILURE',
        version: 2,
      });
    });
  });
}
