import type { TRPCError } from '@trpc/server';
import type { RecordState } from '@idem/contract';
import { describe, expect, it } from 'vitest';
import { MemoryStore, unitJob } from '../../test/unit/memoryStore.js';
import { readIdemErrorCause } from '../errors/IdemRequestError.js';
import { answerExisting } from './answerExisting.js';

function existing(fields: { state: RecordState; responseBody?: string | null; input?: unknown }) {
  const store = new MemoryStore();
  const stored = unitJob(store, { input: fields.input ?? { amount: 1 } }).job.claim;
  const record = store.record(stored, {
    state: fields.state,
    responseBody: fields.responseBody ?? null,
    responseStatus: fields.responseBody ? 200 : null,
  });
  return { store, record };
}

const reasonOf = async (promise: Promise<unknown>) =>
  readIdemErrorCause((await promise.catch((e: unknown) => e)) as TRPCError)?.reason;

describe('answerExisting (in-memory store)', () => {
  it('another input under the same key: 422 IDEMPOTENCY_KEY_REUSED', async () => {
    const { store, record } = existing({ state: 'COMPLETED', responseBody: '1', input: { a: 1 } });
    const { job } = unitJob(store, { input: { a: 2 } });
    expect(await reasonOf(answerExisting(job, record))).toBe('IDEMPOTENCY_KEY_REUSED');
  });

  it.each([
    ['IN_PROGRESS', 'IDEMPOTENCY_REQUEST_IN_PROGRESS'],
    ['PENDING', 'IDEMPOTENCY_REQUEST_IN_PROGRESS'],
    ['RETRYABLE_FAILURE', 'IDEMPOTENCY_REQUEST_IN_PROGRESS'],
    ['OUTCOME_UNKNOWN', 'IDEMPOTENCY_OUTCOME_UNKNOWN'],
    ['NEEDS_RECONCILIATION', 'IDEMPOTENCY_OUTCOME_UNKNOWN'],
  ] as const)('%s: refused with %s, nothing replayed', async (state, reason) => {
    const { store, record } = existing({ state });
    const { job, headers } = unitJob(store);
    expect(await reasonOf(answerExisting(job, record))).toBe(reason);
    expect(headers.has('Idempotent-Replayed')).toBe(false);
  });

  it('COMPLETED: the stored output, marked replayed', async () => {
    const { store, record } = existing({ state: 'COMPLETED', responseBody: '{"id":3}' });
    const { job, headers, events } = unitJob(store);
    await expect(answerExisting(job, record)).resolves.toMatchObject({ ok: true, data: { id: 3 } });
    expect(headers.get('Idempotent-Replayed')).toBe('true');
    expect(events).toEqual([
      { ...job.event, type: 'replayed', operationId: record.operationId, status: 200 },
    ]);
    // Every member, in the order onEvent hooks have always had them (a logged event keeps its
    // layout).
    expect(Object.keys(events[0]!)).toEqual([
      'procedure',
      'scope',
      'keyHash',
      'requestId',
      'type',
      'operationId',
      'status',
    ]);
  });

  it('TERMINAL_FAILURE: the stored error, with its tRPC code', async () => {
    const body = JSON.stringify({ code: 'BAD_REQUEST', message: 'card declined' });
    const { store, record } = existing({ state: 'TERMINAL_FAILURE', responseBody: body });
    const { job } = unitJob(store);
    await expect(answerExisting(job, record)).resolves.toMatchObject({
      ok: false,
      error: { code: 'BAD_REQUEST', message: 'card declined' },
    });
  });

  it('an erased result: IDEMPOTENCY_REPLAY_UNAVAILABLE', async () => {
    const { store, record } = existing({ state: 'COMPLETED', responseBody: null });
    const { job } = unitJob(store);
    expect(await reasonOf(answerExisting(job, record))).toBe('IDEMPOTENCY_REPLAY_UNAVAILABLE');
  });

  it("respond: 'accepted': every duplicate gets 202 with the same operation", async () => {
    const { store, record } = existing({ state: 'IN_PROGRESS' });
    const { job } = unitJob(store, { procedure: { mode: 'external', respond: 'accepted' } });
    await expect(answerExisting(job, record)).resolves.toMatchObject({
      ok: true,
      data: { operationId: record.operationId, state: 'IN_PROGRESS' },
    });
    expect(job.request.response.status).toBe(202);
  });
});
