import { TRPCError } from '@trpc/server';
import { describe, expect, it } from 'vitest';
import { answered, MemoryStore, unitJob, type MemoryTx } from '../../test/unit/memoryStore.js';
import { readIdemErrorCause } from '../errors/IdemRequestError.js';
import type { NextResult } from '../types/IdemJob.js';
import type { ExternalIdemExecution } from '../types/IdemExecution.js';
import { trpcMiddlewareMarker } from '../trpc/trpcInternals.js';
import { executeExternal } from './executeExternal.js';

type Handler = (idem: ExternalIdemExecution<MemoryTx>) => Promise<NextResult>;

/** An external-mode job whose handler receives the phase tools (the one place they are typed). */
function externalJob(store: MemoryStore, handler?: Handler) {
  return unitJob(store, {
    procedure: { mode: 'external' },
    ...(handler ? { next: (idem) => handler(idem as ExternalIdemExecution<MemoryTx>) } : {}),
  });
}

const failed = (error: unknown): NextResult => ({
  ok: false,
  error:
    error instanceof TRPCError
      ? error
      : new TRPCError({ code: 'INTERNAL_SERVER_ERROR', cause: error }),
  marker: trpcMiddlewareMarker,
});

const failing = (code: TRPCError['code']) => async () =>
  failed(new TRPCError({ code, message: `failed with ${code}` }));

const causeOf = async (promise: Promise<unknown>) =>
  readIdemErrorCause((await promise.catch((e: unknown) => e)) as TRPCError);

/** A handler whose external call times out: with a lookup the outcome can be asked for later. */
const callTimesOut =
  (lookup: boolean): Handler =>
  async (idem) => {
    try {
      await idem.external('charge', {
        call: () => Promise.reject(new Error('socket hang up')),
        ...(lookup ? { lookup: async () => ({ found: false as const }) } : {}),
      });
      return { ok: true, data: 'unreachable', marker: trpcMiddlewareMarker };
    } catch (error) {
      return failed(error);
    }
  };

const rowsOf = (store: MemoryStore) => [...store.rows.values()];

describe('executeExternal (in-memory store)', () => {
  it('a fresh key: claimed, the handler runs once with an operation id, the result is stored', async () => {
    const store = new MemoryStore();
    const seen: string[] = [];
    const { job, events } = externalJob(store, async (idem) => {
      seen.push(idem.operationId);
      const charge = await idem.external('charge', { call: async () => 'ch_1' });
      return { ok: true, data: { charge }, marker: trpcMiddlewareMarker };
    });
    await expect(answered(job, executeExternal(job))).resolves.toMatchObject({
      ok: true,
      data: { charge: 'ch_1' },
    });
    const [row] = rowsOf(store);
    expect(seen).toEqual([row?.operationId]);
    expect(row).toMatchObject({
      state: 'COMPLETED',
      responseStatus: 200,
      responseBody: '{"charge":"ch_1"}',
    });
    expect(store.saved.map((s) => s.recoveryPoint)).toEqual(['charge:intent', 'charge']);
    expect(events).toMatchObject([{ type: 'executed', outcome: 'completed' }]);
  });

  it('a busy key: 409 in progress with Retry-After, the handler does not run', async () => {
    const store = new MemoryStore();
    store.busyNext = true;
    const { job, headers } = externalJob(store, () => Promise.reject(new Error('ran')));
    expect((await causeOf(answered(job, executeExternal(job))))?.reason).toBe(
      'IDEMPOTENCY_REQUEST_IN_PROGRESS',
    );
    expect(headers.get('Retry-After')).toBe('1');
    expect(store.rows.size).toBe(0);
  });

  it('an existing completed key: answered by the replay, the handler does not run', async () => {
    const store = new MemoryStore();
    await executeExternal(externalJob(store).job);
    const { job, headers } = externalJob(store, () => Promise.reject(new Error('ran again')));
    await expect(answered(job, executeExternal(job))).resolves.toMatchObject({
      ok: true,
      data: { id: 1 },
    });
    expect(headers.get('Idempotent-Replayed')).toBe('true');
  });

  it('the store fails at the claim: 503 store unavailable, the handler does not run', async () => {
    const store = new MemoryStore();
    store.failNext = 'claim';
    const { job } = externalJob(store, () => Promise.reject(new Error('ran')));
    expect((await causeOf(answered(job, executeExternal(job))))?.reason).toBe(
      'IDEMPOTENCY_STORE_UNAVAILABLE',
    );
  });

  it.each([
    {
      when: 'an external call began',
      progress: { irreversibleAt: new Date(), recoveryPoint: 'charge:intent' },
      reason: 'erased_after_call',
    },
    {
      when: 'a phase committed, before any external call',
      progress: { irreversibleAt: null, recoveryPoint: 'order' },
      reason: 'erased_after_step',
    },
  ] as const)('erased after $when: handed to an operator, never re-run blind', async (c) => {
    const store = new MemoryStore();
    const { job, events } = externalJob(store, () => Promise.reject(new Error('re-ran blind')));
    const erased = store.record(job.claim, {
      state: 'RETRYABLE_FAILURE',
      ...c.progress,
      erasedAt: new Date(),
      steps: null,
    });
    store.seed(erased);
    const cause = await causeOf(answered(job, executeExternal(job)));
    expect(cause).toMatchObject({
      reason: 'IDEMPOTENCY_OUTCOME_UNKNOWN',
      operationId: erased.operationId,
    });
    expect(rowsOf(store)).toMatchObject([
      { state: 'NEEDS_RECONCILIATION', reconcileReason: c.reason },
    ]);
    expect(events.map((e) => e.type)).not.toContain('executed');
  });

  it('a deterministic 4xx: the failure is stored and answered as every replay will be', async () => {
    const store = new MemoryStore();
    const { job, events } = externalJob(store, failing('BAD_REQUEST'));
    await expect(answered(job, executeExternal(job))).resolves.toMatchObject({
      ok: false,
      error: { code: 'BAD_REQUEST' },
    });
    expect(rowsOf(store)).toMatchObject([{ state: 'TERMINAL_FAILURE', responseStatus: 400 }]);
    expect(events).toMatchObject([{ type: 'executed', outcome: 'failed' }]);
  });

  it('a transient 5xx: the key is released for the next retry, the failure passes through', async () => {
    const store = new MemoryStore();
    const { job, events } = externalJob(store, failing('INTERNAL_SERVER_ERROR'));
    await expect(answered(job, executeExternal(job))).resolves.toMatchObject({
      ok: false,
      error: { code: 'INTERNAL_SERVER_ERROR' },
    });
    expect(rowsOf(store)).toMatchObject([{ state: 'RETRYABLE_FAILURE', leaseOwner: null }]);
    expect(events).toMatchObject([{ type: 'executed', outcome: 'released' }]);
  });

  it('a call timed out with a lookup: OUTCOME_UNKNOWN, 503 lookup pending, retryable', async () => {
    const store = new MemoryStore();
    const { job, events } = externalJob(store, callTimesOut(true));
    const cause = await causeOf(answered(job, executeExternal(job)));
    expect(cause).toMatchObject({
      reason: 'IDEMPOTENCY_OUTCOME_LOOKUP_PENDING',
      retryAfterMs: 1000,
    });
    expect(rowsOf(store)).toMatchObject([{ state: 'OUTCOME_UNKNOWN', reconcileReason: null }]);
    expect(events).toMatchObject([
      { type: 'executed', outcome: 'unsettled' },
      { type: 'rejected', reason: 'IDEMPOTENCY_OUTCOME_LOOKUP_PENDING' },
    ]);
  });

  it('a call timed out without a lookup: NEEDS_RECONCILIATION, refused as outcome unknown', async () => {
    const store = new MemoryStore();
    const { job } = externalJob(store, callTimesOut(false));
    const cause = await causeOf(answered(job, executeExternal(job)));
    expect(cause).toMatchObject({ reason: 'IDEMPOTENCY_OUTCOME_UNKNOWN' });
    expect(cause?.retryAfterMs).toBeUndefined();
    expect(rowsOf(store)).toMatchObject([
      { state: 'NEEDS_RECONCILIATION', reconcileReason: 'no_lookup' },
    ]);
    // A retry is refused too: nothing runs again until an operator resolves it.
    const retry = externalJob(store, () => Promise.reject(new Error('ran again')));
    expect((await causeOf(answered(retry.job, executeExternal(retry.job))))?.reason).toBe(
      'IDEMPOTENCY_OUTCOME_UNKNOWN',
    );
  });

  it('ownership lost during the handler: its result is discarded, 409 in progress', async () => {
    const store = new MemoryStore();
    const { job, events } = externalJob(store, async (idem) => {
      store.takeOver(rowsOf(store)[0]?.id ?? '');
      await idem.heartbeat().catch(() => undefined);
      return { ok: true, data: 'late', marker: trpcMiddlewareMarker };
    });
    expect((await causeOf(answered(job, executeExternal(job))))?.reason).toBe(
      'IDEMPOTENCY_REQUEST_IN_PROGRESS',
    );
    expect(rowsOf(store)).toMatchObject([{ state: 'IN_PROGRESS', responseBody: null }]);
    expect(events).toMatchObject([
      { type: 'executed', outcome: 'discarded' },
      { type: 'rejected', reason: 'IDEMPOTENCY_REQUEST_IN_PROGRESS' },
    ]);
  });

  it('the completion finds the fence broken: discarded, 409 in progress', async () => {
    const store = new MemoryStore();
    store.staleNext = true;
    const { job, events } = externalJob(store);
    expect((await causeOf(answered(job, executeExternal(job))))?.reason).toBe(
      'IDEMPOTENCY_REQUEST_IN_PROGRESS',
    );
    expect(events).toMatchObject([
      { type: 'executed', outcome: 'discarded' },
      { type: 'rejected', reason: 'IDEMPOTENCY_REQUEST_IN_PROGRESS' },
    ]);
  });

  it('the store fails at the completion: 503, the record stays IN_PROGRESS under its lease', async () => {
    const store = new MemoryStore();
    store.failNext = 'complete';
    const { job } = externalJob(store);
    expect((await causeOf(answered(job, executeExternal(job))))?.reason).toBe(
      'IDEMPOTENCY_STORE_UNAVAILABLE',
    );
    expect(rowsOf(store)).toMatchObject([{ state: 'IN_PROGRESS', leaseOwner: 'unit' }]);
  });
});
