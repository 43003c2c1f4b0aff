import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import {
  claimedRecord,
  claimInput,
  conformanceHelpers,
  existingRecord,
  storedResponse,
  type ConformanceTarget,
} from '../conformanceTarget.js';

/** Leases and replay windows, moved through with shifted database clocks. */
export function clockCases<TTx>(target: () => ConformanceTarget<TTx>): void {
  const { store, laterStore, rowsOfKey } = conformanceHelpers(target);

  describe('leases, by database time', () => {
    it('answers a live lease with the time it has left', async () => {
      const input = claimInput({ leaseMs: 60_000 });
      claimedRecord(await store().claim(input));
      const now = existingRecord(await store().claim(input));
      expect(now.leaseExpired).toBe(false);
      expect(now.leaseRemainingMs).toBeGreaterThan(50_000);
      expect(now.leaseRemainingMs).toBeLessThanOrEqual(60_000);
      const later = existingRecord(await laterStore(40_000).claim(input));
      expect(later.state).toBe('IN_PROGRESS');
      expect(later.version).toBe(1);
      expect(later.leaseRemainingMs).toBeGreaterThan(10_000);
      expect(later.leaseRemainingMs).toBeLessThanOrEqual(20_000);
    });

    it('takes over an expired lease; the stale owner cannot write, the new one can', async () => {
      const input = claimInput({ leaseMs: 5_000, owner: 'worker-a' });
      const a = claimedRecord(await store().claim(input));
      const later = laterStore(10_000);
      const expired = await later.read(input);
      expect(expired).toMatchObject({ leaseExpired: true, leaseRemainingMs: 0 });
      const b = claimedRecord(await later.claim({ ...input, owner: 'worker-b' }));
      expect(b).toMatchObject({
        id: a.id,
        operationId: a.operationId,
        takeover: true,
        version: 2,
        attempts: 2,
        leaseOwner: 'worker-b',
        leaseExpired: false,
      });
      expect(await store().complete(a, storedResponse({ body: '"stale"' }))).toBe(false);
      expect(await later.complete(b, storedResponse({ body: '"fresh"' }))).toBe(true);
      expect(await store().read(input)).toMatchObject({
        state: 'COMPLETED',
        responseBody: '"fresh"',
        version: 2,
      });
    });

    it('does not take over an expired lease for a request with another fingerprint', async () => {
      const input = claimInput({ leaseMs: 5_000 });
      claimedRecord(await store().claim(input));
      const other = existingRecord(
        await laterStore(10_000).claim({ ...input, fingerprint: 'other' }),
      );
      expect(other).toMatchObject({ state: 'IN_PROGRESS', version: 1, leaseExpired: true });
    });

    it('lets exactly one of several late claimers take over an expired lease', async () => {
      const input = claimInput({ leaseMs: 5_000 });
      claimedRecord(await store().claim(input));
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          laterStore(10_000).claim({ ...input, owner: `late-${i}` }),
        ),
      );
      expect(results.filter((r) => r.kind === 'claimed')).toHaveLength(1);
      expect(results.filter((r) => r.kind === 'existing')).toHaveLength(7);
      expect(await store().read(input)).toMatchObject({ version: 2, attempts: 2 });
    });

    // OUTCOME_UNKNOWN is taken over by the same request: see recoveryCases.
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

  describe('replay window, by database time', () => {
    it.each([['complete'], ['fail']] as const)(
      'after %s: replays until the window closes, then the key is a new request',
      async (write) => {
        const input = claimInput();
        const first = claimedRecord(await store().claim(input));
        expect(await store()[write](first, storedResponse({ replayWindowMs: 60_000 }))).toBe(true);

        const before = existingRecord(await laterStore(59_000).claim(input));
        expect(before.id).toBe(first.id);
        expect(before.state).toBe(write === 'complete' ? 'COMPLETED' : 'TERMINAL_FAILURE');

        const racers = await Promise.all([
          laterStore(61_000).claim({ ...input, owner: 'racer-1' }),
          laterStore(61_000).claim({ ...input, owner: 'racer-2' }),
        ]);
        const winners = racers.filter((r) => r.kind === 'claimed');
        expect(winners).toHaveLength(1);
        const fresh = claimedRecord(winners[0]!);
        expect(fresh).toMatchObject({
          takeover: false,
          attempts: 1,
          version: 1,
          state: 'IN_PROGRESS',
        });
        expect(fresh.id).not.toBe(first.id);
        expect(fresh.operationId).not.toBe(first.operationId);
        const loser = existingRecord(racers.find((r) => r.kind !== 'claimed')!);
        expect(loser.id).toBe(fresh.id);

        expect(await rowsOfKey(input.keyHash)).toEqual([
          { id: first.id, superseded: true, attempts: 1, state: before.state },
          { id: fresh.id, superseded: false, attempts: 1, state: 'IN_PROGRESS' },
        ]);
        expect((await laterStore(61_000).read(input))?.id).toBe(fresh.id);
      },
    );

    it('answers a closed window for another fingerprint as a new request too', async () => {
      const input = claimInput();
      const first = claimedRecord(await store().claim(input));
      await store().complete(first, storedResponse({ replayWindowMs: 1_000 }));
      const fresh = claimedRecord(
        await laterStore(2_000).claim({ ...input, fingerprint: 'other' }),
      );
      expect(fresh.fingerprint).toBe('other');
      expect(fresh.id).not.toBe(first.id);
    });
  });
}
