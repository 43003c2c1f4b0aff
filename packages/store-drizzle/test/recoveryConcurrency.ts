import { randomUUID } from 'node:crypto';
import type { RecoveryStore } from '@idem/contract';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import type { DrizzleIdempotencyStoreOptions } from '../src/index.js';
import {
  claimedRecord,
  claimInput,
  conformanceHelpers,
  storedResponse,
  type ConformanceTarget,
} from './conformanceTarget.js';

/** A target whose stores can each run on a connection of their own. */
export interface ConcurrencyTarget<TTx> extends ConformanceTarget<TTx> {
  /** A store on a new connection (a pool of one): another instance of the application. */
  separateStore(options?: DrizzleIdempotencyStoreOptions): RecoveryStore<TTx>;
}

const HOUR = 3_600_000;

/**
 * The background workers and operators racing each other and the owner, on a server that runs
 * statements at the same time (PostgreSQL; PGlite runs one at a time).
 */
export function recoveryConcurrency<TTx>(target: () => ConcurrencyTarget<TTx>): void {
  const { store, surviving } = conformanceHelpers(target);

  /** `count` records of a procedure of their own, abandoned 5 s after now. */
  async function abandoned(count: number) {
    const procedure = `payments.${randomUUID()}`;
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      ids.push(claimedRecord(await store().claim(claimInput({ procedure, leaseMs: 5_000 }))).id);
    }
    return { procedure, ids };
  }

  async function reapEverything() {
    const far = target().createStore({ dangerouslyShiftClockMs: 100 * 365 * 24 * HOUR });
    while ((await far.reap({ limit: 10_000 })) > 0);
  }

  describe('recovery, with real concurrency', () => {
    it('two completers on separate connections never take the same record', async () => {
      const [a, b] = [0, 1].map(() => target().separateStore({ dangerouslyShiftClockMs: 60_000 }));
      await Promise.all([a!.stuckReport({ graceMs: 0 }), b!.stuckReport({ graceMs: 0 })]);
      for (let round = 0; round < 5; round++) {
        const { procedure, ids } = await abandoned(20);
        const options = { leaseMs: 30_000, limit: 20, procedures: [procedure] };
        const [byA, byB] = await Promise.all([
          a!.takeOverAbandoned({ ...options, owner: 'completer-a' }),
          b!.takeOverAbandoned({ ...options, owner: 'completer-b' }),
        ]);
        const taken = [...byA, ...byB].map((r) => r.id);
        expect(new Set(taken).size).toBe(taken.length);
        expect(taken.sort()).toEqual([...ids].sort());
        for (const record of [...byA, ...byB]) expect(record.version).toBe(2);
      }
    });

    it('a completer skips the rows another one holds, without waiting for it', async () => {
      const { procedure, ids } = await abandoned(4);
      const holder = store();
      const other = target().separateStore({ dangerouslyShiftClockMs: 60_000 });
      const held = ids.slice(0, 2);
      const taken = await holder.transaction(async (tx) => {
        await target().rows(
          sql`SELECT id FROM idem_records WHERE id::text = ANY(${sql.param(held)}::text[]) FOR UPDATE`,
          tx,
        );
        const options = { owner: 'other', leaseMs: 30_000, limit: 10, procedures: [procedure] };
        return other.takeOverAbandoned(options);
      });
      expect(taken.map((r) => r.id).sort()).toEqual(ids.slice(2).sort());
    });

    it('two reapers on separate connections delete each row once', async () => {
      await reapEverything();
      const ids: string[] = [];
      for (let i = 0; i < 40; i++) {
        const record = claimedRecord(await store().claim(claimInput()));
        await store().complete(record, storedResponse({ replayWindowMs: 0, retentionMs: 1_000 }));
        ids.push(record.id);
      }
      const reapers = [0, 1].map(() => target().separateStore({ dangerouslyShiftClockMs: 10_000 }));
      // Connected before the race, so that neither starts late.
      await Promise.all(reapers.map((reaper) => reaper.stuckReport({ graceMs: 0 })));
      const counts = await Promise.all(
        reapers.map(async (reaper) => {
          let deleted = 0;
          for (;;) {
            const n = await reaper.reap({ limit: 5 });
            if (n === 0) return deleted;
            deleted += n;
          }
        }),
      );
      expect(counts[0]! + counts[1]!).toBe(40);
      expect(await surviving(ids)).toBe(0);
    });

    it("cancel racing the owner's irreversible save: one of them wins, never both", async () => {
      const canceller = target().separateStore();
      for (let round = 0; round < 20; round++) {
        const input = claimInput();
        const record = claimedRecord(await store().claim(input));
        const intent = { steps: '{"charge":"intent"}', recoveryPoint: 'charge:intent' };
        const [cancelled, saved] = await Promise.all([
          canceller.cancel(record, storedResponse({ status: 409 })),
          store().saveSteps(record, { ...intent, leaseMs: 30_000, irreversible: true }),
        ]);
        const after = await store().readRecovery(input);
        if (cancelled === 'cancelled') {
          expect(saved).toBe(false);
          expect(after).toMatchObject({ state: 'TERMINAL_FAILURE', irreversibleAt: null });
        } else {
          expect([cancelled, saved]).toEqual(['irreversible', true]);
          expect(after).toMatchObject({ state: 'IN_PROGRESS', version: 1 });
        }
      }
    });

    it("resolve racing the owner's completion: one of them writes, and only a resolve audits", async () => {
      const operator = target().separateStore();
      for (let round = 0; round < 20; round++) {
        const record = claimedRecord(await store().claim(claimInput({ leaseMs: HOUR })));
        const response = storedResponse({ status: 400 });
        const [resolved, completed] = await Promise.all([
          operator.resolve(record, {
            state: 'TERMINAL_FAILURE',
            response,
            actor: 'ops',
            note: 'race',
          }),
          store().complete(record, storedResponse()),
        ]);
        expect(resolved !== completed).toBe(true);
        const audit = await store().listAudit(record.id);
        expect(audit.map((a) => [a.fromState, a.fromVersion])).toEqual(
          resolved ? [['IN_PROGRESS', 1]] : [],
        );
      }
    });
  });
}
