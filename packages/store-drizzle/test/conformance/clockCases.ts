import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import {
  claimedRecord,
  claimInput,
  conformanceHelpers,
  existingRecord,
  type ConformanceTarget,
} from '../conformanceTarget.js';

/** Leases and replay windows, moved through with shifted database clocks. */
export function clockCases<TTx>(target: () => ConformanceTarget<TTx>): void {
  const { store, laterStore } = conformanceHelpers(target);

  describe('leases, by database time', () => {
    it.each([['NEEDS_RECONCILIATION'], ['PENDING']])(
      'never takes over a %s record, even with its lease run out',
      async (state) => {
        const input = claimInput({ leaseMs: 5_000 });
        const record = claimedRecord(await store().claim(input));
        await target().rows(
          sql`UPDATE idem_records SET state = ${state} WHERE id = ${record.id}::bigint`,
        );
        const answer = existingRecord(await laterStore(3_600_000).claim(input));
        expect(answer).toMatchObject({ state, version: 1 });
      },
    );
  });
}
