import type { ClaimInput, Resolution, StoredResponse } from '@idem/contract';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import {
  claimedRecord,
  claimInput,
  conformanceHelpers,
  storedResponse,
  type ConformanceTarget,
} from '../conformanceTarget.js';

const HOUR = 3_600_000;

/**
 * Operator tools, where a case needs a row put in place or removed by SQL; the rest are the store
 * contract's cases (`storeContractCases` of `@idem/fixtures`).
 */
export function operatorCases<TTx>(target: () => ConformanceTarget<TTx>): void {
  const { store, force } = conformanceHelpers(target);
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

  describe('resolve', () => {
    // From the other states: the store contract's cases (@idem/fixtures).
    it('resolves from PENDING', async () => {
      const from = 'PENDING';
      const record = await claimed({ leaseMs: HOUR });
      await force(record.id, { state: from });
      const response = storedResponse({ status: 400, body: '{"code":"DECLINED"}' });
      const failed = resolution({ state: 'TERMINAL_FAILURE', response });
      expect(await store().resolve(record, failed)).toBe(true);
      expect(await store().findByOperationId(record.operationId)).toMatchObject({
        state: 'TERMINAL_FAILURE',
        version: 2,
        responseStatus: 400,
      });
      expect((await store().listAudit(record.id)).map((a) => a.fromState)).toEqual([from]);
    });

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
}
