import { TRPCError } from '@trpc/server';
import { describe, expect, it } from 'vitest';
import { answered, MemoryStore, unitJob } from '../../test/unit/memoryStore.js';
import { readIdemErrorCause } from '../errors/IdemRequestError.js';
import { trpcMiddlewareMarker } from '../trpc/trpcInternals.js';
import { executeLocal } from './executeLocal.js';

const failing = (code: TRPCError['code']) => async () => ({
  ok: false as const,
  error: new TRPCError({ code, message: `failed with ${code}` }),
  marker: trpcMiddlewareMarker,
});

describe('executeLocal (in-memory store)', () => {
  it('a fresh key: runs the handler once, stores its result in the same transaction', async () => {
    const store = new MemoryStore();
    let runs = 0;
    const { job, events } = unitJob(store, {
      next: async (idem) => {
        runs += 1;
        expect(idem).toHaveProperty('tx');
        return { ok: true, data: { id: 7 }, marker: trpcMiddlewareMarker };
      },
    });
    await expect(answered(job, executeLocal(job))).resolves.toMatchObject({
      ok: true,
      data: { id: 7 },
    });
    expect(runs).toBe(1);
    expect([...store.rows.values()]).toMatchObject([
      { state: 'COMPLETED', responseStatus: 200, responseBody: '{"id":7}' },
    ]);
    expect(events.map((e) => e.type)).toEqual(['executed']);
  });

  it('a completed key: replays the stored result, the handler does not run', async () => {
    const store = new MemoryStore();
    const first = unitJob(store);
    await answered(first.job, executeLocal(first.job));
    const { job, headers } = unitJob(store, {
      next: () => Promise.reject(new Error('the handler must not run on a replay')),
    });
    await expect(answered(job, executeLocal(job))).resolves.toMatchObject({
      ok: true,
      data: { id: 1 },
    });
    expect(headers.get('Idempotent-Replayed')).toBe('true');
  });

  it('a busy key (lock wait ran out): 409 in progress with Retry-After, nothing stored', async () => {
    const store = new MemoryStore();
    store.busyNext = true;
    const { job, headers } = unitJob(store);
    const error = await answered(job, executeLocal(job)).catch((e: unknown) => e as TRPCError);
    expect(readIdemErrorCause(error as TRPCError)?.reason).toBe('IDEMPOTENCY_REQUEST_IN_PROGRESS');
    expect(headers.get('Retry-After')).toBe('1');
    expect(store.rows.size).toBe(0);
  });

  it('a deterministic 4xx: the handler rolls back, the failure is stored for replay', async () => {
    const store = new MemoryStore();
    const { job, events } = unitJob(store, { next: failing('BAD_REQUEST') });
    await expect(answered(job, executeLocal(job))).resolves.toMatchObject({
      ok: false,
      error: { code: 'BAD_REQUEST' },
    });
    expect([...store.rows.values()]).toMatchObject([
      { state: 'TERMINAL_FAILURE', responseStatus: 400 },
    ]);
    expect(events.map((e) => e.type)).toEqual(['executed']);
  });

  it.each([
    ['a 5xx', 'INTERNAL_SERVER_ERROR', 'deterministic'],
    ['a 409', 'CONFLICT', 'deterministic'],
    ['a 4xx under failures: none', 'BAD_REQUEST', 'none'],
  ] as const)(
    '%s: released, nothing stored, the next retry runs again',
    async (_, code, failures) => {
      const store = new MemoryStore();
      const { job } = unitJob(store, { next: failing(code), procedure: { failures } });
      await expect(answered(job, executeLocal(job))).resolves.toMatchObject({
        ok: false,
        error: { code },
      });
      expect(store.rows.size).toBe(0);
    },
  );

  it('the store fails at the claim: 503 store unavailable, the handler does not run', async () => {
    const store = new MemoryStore();
    store.failNext = 'claim';
    const { job, events } = unitJob(store, {
      next: () => Promise.reject(new Error('the handler must not run')),
    });
    const error = (await answered(job, executeLocal(job)).catch((e: unknown) => e)) as TRPCError;
    expect(readIdemErrorCause(error)?.reason).toBe('IDEMPOTENCY_STORE_UNAVAILABLE');
    expect(events.map((e) => e.type)).toEqual(['store-error', 'rejected']);
  });

  it('the completion finds its own record changed: 503, and the transaction rolls back', async () => {
    const store = new MemoryStore();
    store.staleNext = true;
    const { job } = unitJob(store);
    const error = (await answered(job, executeLocal(job)).catch((e: unknown) => e)) as TRPCError;
    expect(readIdemErrorCause(error)?.reason).toBe('IDEMPOTENCY_STORE_UNAVAILABLE');
    expect(store.rows.size).toBe(0);
  });

  it('storing a deterministic failure fails: the failure is still the answer, not stored', async () => {
    const store = new MemoryStore();
    store.failNext = 'fail';
    const { job, events } = unitJob(store, { next: failing('BAD_REQUEST') });
    await expect(answered(job, executeLocal(job))).resolves.toMatchObject({
      ok: false,
      error: { code: 'BAD_REQUEST' },
    });
    expect(store.rows.size).toBe(0);
    expect(events.map((e) => e.type)).toEqual(['store-error']);
  });
});
