import { TRPCError } from '@trpc/server';
import { describe, expect, it } from 'vitest';
import { MemoryStore, unitJob } from '../../test/unit/memoryStore.js';
import { isLostOwnershipError, isOutcomeUnknownError } from '../errors/idemErrors.js';
import { PhasedExecution } from './PhasedExecution.js';

/** A claimed record on a fresh store and the attempt running it (steps as an earlier attempt left them). */
async function attempt(steps: Record<string, { status: 'intent' | 'done'; result?: string }> = {}) {
  const store = new MemoryStore();
  const { job } = unitJob(store, { procedure: { mode: 'external' } });
  const claim = await store.claim(job.claim);
  if (claim.kind !== 'claimed') throw new Error('expected a claim');
  const { record } = claim;
  const text = Object.keys(steps).length > 0 ? JSON.stringify(steps) : null;
  const phased = new PhasedExecution(
    job,
    store,
    { id: record.id, version: record.version },
    record.operationId,
    { steps: text, recoveryPoint: null },
  );
  return { store, phased, record };
}

describe('PhasedExecution (in-memory store)', () => {
  it('a phase runs once and commits its result with the recovery point', async () => {
    const { store, phased } = await attempt();
    await expect(phased.phase('reserve', async () => ({ held: 3 }))).resolves.toEqual({ held: 3 });
    expect(store.saved.map((s) => s.recoveryPoint)).toEqual(['reserve']);
  });

  it('a phase an earlier attempt finished returns its recorded result and does not run', async () => {
    const { phased } = await attempt({ reserve: { status: 'done', result: '{"held":3}' } });
    const value = await phased.phase('reserve', () => Promise.reject(new Error('ran again')));
    expect(value).toEqual({ held: 3 });
  });

  it('an external call: the intent (irreversible) commits before the call, the result after', async () => {
    const { store, phased, record } = await attempt();
    const calls: string[] = [];
    const value = await phased.external('charge', {
      call: async (operationId) => {
        calls.push(operationId);
        expect(store.saved.at(-1)).toMatchObject({
          recoveryPoint: 'charge:intent',
          irreversible: true,
        });
        return 'ch_1';
      },
    });
    expect(value).toBe('ch_1');
    expect(calls).toEqual([record.operationId]);
    expect(store.saved.map((s) => s.recoveryPoint)).toEqual(['charge:intent', 'charge']);
  });

  it('an intent without result and a lookup that finds the call: its result, no second call', async () => {
    const { phased } = await attempt({ charge: { status: 'intent' } });
    const value = await phased.external<string>('charge', {
      call: () => Promise.reject(new Error('called again')),
      lookup: async () => ({ found: true, result: 'ch_found' }),
    });
    expect(value).toBe('ch_found');
  });

  it('an intent without result and a lookup that finds nothing: calls again, after a new intent', async () => {
    const { store, phased } = await attempt({ charge: { status: 'intent' } });
    const value = await phased.external('charge', {
      call: async () => 'ch_2',
      lookup: async () => ({ found: false }),
    });
    expect(value).toBe('ch_2');
    expect(store.saved.map((s) => s.recoveryPoint)).toEqual(['charge:intent', 'charge']);
  });

  it('an intent without result and no lookup: an operator must reconcile, nothing is called', async () => {
    const { phased } = await attempt({ charge: { status: 'intent' } });
    const error = await phased
      .external('charge', { call: () => Promise.reject(new Error('called again')) })
      .catch((e: unknown) => e);
    expect(isOutcomeUnknownError(error) && error.settleBy).toBe('operator');
    expect([phased.unsettled, phased.unsettledReason]).toEqual([
      'NEEDS_RECONCILIATION',
      'no_lookup',
    ]);
  });

  it.each([
    ['with a lookup', true, 'OUTCOME_UNKNOWN', 'lookup'],
    ['without a lookup', false, 'NEEDS_RECONCILIATION', 'operator'],
  ] as const)(
    'a call that fails (reset) %s: unknown outcome',
    async (_, withLookup, unsettled, by) => {
      const { phased } = await attempt();
      const reset = Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
      const error = await phased
        .external('charge', {
          call: () => Promise.reject(reset),
          ...(withLookup ? { lookup: async () => ({ found: false as const }) } : {}),
        })
        .catch((e: unknown) => e);
      expect(isOutcomeUnknownError(error) && error.settleBy).toBe(by);
      expect(phased.unsettled).toBe(unsettled);
    },
  );

  it('a call refused with a 4xx TRPCError: a definite answer, rethrown, the outcome is known', async () => {
    const { phased } = await attempt();
    const declined = new TRPCError({ code: 'BAD_REQUEST', message: 'card declined' });
    await expect(phased.external('charge', { call: () => Promise.reject(declined) })).rejects.toBe(
      declined,
    );
    expect(phased.unsettled).toBeNull();
  });

  it('taken over before the call: LostOwnershipError at the intent, the call never runs', async () => {
    const { store, phased, record } = await attempt();
    store.takeOver(record.id);
    const error = await phased
      .external('charge', { call: () => Promise.reject(new Error('called by a stale worker')) })
      .catch((e: unknown) => e);
    expect(isLostOwnershipError(error)).toBe(true);
    expect(phased.lost).toBe(true);
    await expect(phased.heartbeat()).rejects.toSatisfy(isLostOwnershipError);
  });

  it('a step name used twice in one attempt, or out of bounds: a TypeError', async () => {
    const { phased } = await attempt();
    await phased.phase('a', async () => 1);
    await expect(phased.phase('a', async () => 2)).rejects.toThrow(/unique/);
    await expect(phased.phase('', async () => 2)).rejects.toThrow(TypeError);
  });
});
