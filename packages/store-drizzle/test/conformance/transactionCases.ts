import { randomUUID } from 'node:crypto';
import type { RecoveryRecord, RecoveryStore } from '@idem/contract';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import {
  claimedRecord,
  claimInput,
  conformanceHelpers,
  releaseWindows,
  storedResponse,
  type ConformanceTarget,
} from '../conformanceTarget.js';

/** Claims inside transactions, and the statements each claim path costs. */
export function transactionCases<TTx>(target: () => ConformanceTarget<TTx>): void {
  const { store, laterStore } = conformanceHelpers(target);

  describe('transactions', () => {
    it.each([
      ['a fresh claim', 'fresh'],
      ['an existing record', 'existing'],
      ['a takeover', 'takeover'],
      ['a claim after the replay window', 'superseded'],
    ] as const)('restores lock_timeout after %s inside a transaction', async (_name, path) => {
      const input = claimInput({ leaseMs: 5_000 });
      if (path !== 'fresh') {
        const first = claimedRecord(await store().claim(input));
        if (path === 'takeover') await store().release(first, releaseWindows());
        if (path === 'superseded')
          await store().complete(first, storedResponse({ replayWindowMs: 1_000 }));
      }
      const s = path === 'superseded' ? laterStore(2_000) : store();
      const settings = await s.transaction(async (tx) => {
        await target().rows(sql`SELECT set_config('lock_timeout', '7s', true)`, tx);
        const result = await s.claim({ ...input, lockTimeoutMs: 150 }, tx);
        const [after] = await target().rows<{ lock_timeout: string }>(sql`SHOW lock_timeout`, tx);
        return { kind: result.kind, after: after?.lock_timeout };
      });
      expect(settings).toEqual({ kind: path === 'existing' ? 'existing' : 'claimed', after: '7s' });
    });
  });

  describe('statements per claim (what the benchmarks pay)', () => {
    it.each([
      ['a fresh claim', 1, 'fresh', {}],
      ['a fresh claim with its input', 1, 'fresh', { input: '{"amount":100}' }],
      ['a replay of a completed record', 1, 'completed', {}],
      ['a replay with a lock timeout', 1, 'completed', { lockTimeoutMs: 2_000 }],
      ['an in-progress duplicate', 1, 'inProgress', {}],
      ['a takeover of a released key', 2, 'released', {}],
      ['a takeover of an unknown outcome', 2, 'unknown', {}],
      ['a new request after the replay window', 3, 'windowClosed', {}],
    ] as const)('%s costs %i statement(s)', async (_name, expected, setup, overrides) => {
      const input = claimInput(overrides);
      if (setup !== 'fresh') {
        const first = claimedRecord(await store().claim(input));
        if (setup === 'completed') await store().complete(first, storedResponse());
        if (setup === 'released') await store().release(first, releaseWindows());
        if (setup === 'unknown') await store().markUnsettled(first, 'OUTCOME_UNKNOWN');
        if (setup === 'windowClosed')
          await store().complete(first, storedResponse({ replayWindowMs: 1_000 }));
      }
      const queries: string[] = [];
      const counted = target().createStore({
        logQuery: (query) => queries.push(query),
        dangerouslyShiftClockMs: setup === 'windowClosed' ? 2_000 : 0,
      });
      const result = await counted.claim(input);
      expect(result.kind).toBe(
        setup === 'completed' || setup === 'inProgress' ? 'existing' : 'claimed',
      );
      expect(queries).toHaveLength(expected);
    });
  });

  describe('statements per recovery and operator call', () => {
    const response = storedResponse();
    const resolution = { state: 'TERMINAL_FAILURE', response, actor: 'ops', note: '' } as const;
    it.each<[string, (s: RecoveryStore<TTx>, r: RecoveryRecord) => Promise<unknown>]>([
      ['readRecovery', (s, r) => s.readRecovery(r)],
      ['findByOperationId', (s, r) => s.findByOperationId(r.operationId)],
      ['saveSteps', (s, r) => s.saveSteps(r, { steps: '{}', recoveryPoint: 'a', leaseMs: 1_000 })],
      ['extendLease', (s, r) => s.extendLease(r, 1_000)],
      ['markUnsettled', (s, r) => s.markUnsettled(r, 'OUTCOME_UNKNOWN')],
      [
        'takeOverAbandoned',
        (s, r) =>
          s.takeOverAbandoned({ owner: 'c', leaseMs: 1_000, limit: 10, procedures: [r.procedure] }),
      ],
      ['cancel', (s, r) => s.cancel(r, response)],
      ['reap', (s) => s.reap({ limit: 10 })],
      ['stuckReport', (s) => s.stuckReport({ graceMs: 0 })],
      ['listStuck', (s) => s.listStuck({ graceMs: 0, limit: 10 })],
      ['resolve (with its audit row)', (s, r) => s.resolve(r, resolution)],
      ['listAudit', (s, r) => s.listAudit(r.id)],
      ['eraseScope', (s, r) => s.eraseScope(r.scope)],
    ])('%s costs 1 statement', async (_name, call) => {
      const input = claimInput({ scope: `s_${randomUUID()}`, procedure: `p.${randomUUID()}` });
      const record = claimedRecord(await store().claim(input));
      const queries: string[] = [];
      const counted = target().createStore({ logQuery: (query) => queries.push(query) });
      await call(counted, record);
      expect(queries).toHaveLength(1);
    });
  });
}
