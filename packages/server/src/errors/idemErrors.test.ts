import { TRPCError } from '@trpc/server';
import { describe, expect, it } from 'vitest';
import type { IdemServerEvent } from '../types/IdemServerEvent.js';
import {
  inProgress,
  isLostOwnershipError,
  isOutcomeUnknownError,
  LostOwnershipError,
  OutcomeUnknownError,
  reject,
  storeUnavailable,
} from './idemErrors.js';
import { answerRefusal, type RefusalTarget } from '../executors/answerRefusal.js';
import { readIdemErrorCause } from './IdemRequestError.js';

describe('handler-facing errors', () => {
  it.each([
    ['LostOwnershipError', new LostOwnershipError('charge'), true, false],
    ['OutcomeUnknownError', new OutcomeUnknownError('charge', 'lookup'), false, true],
    // Another installed copy of @idem/server: a different class, the same brand.
    ['a copy of LostOwnershipError', { isLostOwnershipError: true }, true, false],
    ['a copy of OutcomeUnknownError', { isOutcomeUnknownError: true }, false, true],
    ['an Error', new Error('lost ownership'), false, false],
    ['a TRPCError', new TRPCError({ code: 'CONFLICT' }), false, false],
    ['null', null, false, false],
    ['a string', 'isLostOwnershipError', false, false],
  ])('%s: guards say %s / %s', (_, value, lost, unknown) => {
    expect(isLostOwnershipError(value)).toBe(lost);
    expect(isOutcomeUnknownError(value)).toBe(unknown);
  });

  it('OutcomeUnknownError says how it will be settled, and keeps its cause', () => {
    const cause = new Error('socket hang up');
    const error = new OutcomeUnknownError('charge', 'operator', { cause });
    expect(error).toMatchObject({ step: 'charge', settleBy: 'operator', cause });
    expect(error.message).toMatch(/operator must reconcile/);
  });
});

describe('refusals are values', () => {
  it('409 in progress: the reason, the wait and the operation id in data.idem', () => {
    const error = inProgress(2500, 'op-1');
    expect(error.code).toBe('CONFLICT');
    expect(readIdemErrorCause(error)).toEqual({
      reason: 'IDEMPOTENCY_REQUEST_IN_PROGRESS',
      retryAfterMs: 2500,
      operationId: 'op-1',
    });
  });

  it("503 store unavailable: the store's error is in the cause chain, not the message", () => {
    const cause = new Error('ECONNREFUSED');
    const error = storeUnavailable(cause);
    expect(readIdemErrorCause(error)).toEqual({
      reason: 'IDEMPOTENCY_STORE_UNAVAILABLE',
      retryAfterMs: 1000,
    });
    expect((error.cause as Error).cause).toBe(cause);
    expect(error.message).not.toMatch(/ECONNREFUSED/);
  });
});

describe('answerRefusal', () => {
  function target() {
    const events: IdemServerEvent[] = [];
    const headers = new Map<string, string>();
    const job: RefusalTarget = {
      runtime: { emit: (event: IdemServerEvent) => void events.push(event) },
      event: { procedure: 'orders.create', scope: 's', keyHash: 'h', requestId: null },
      request: { response: { headers } },
    };
    return { job, events, headers };
  }

  it('a 409: Retry-After in whole seconds, one rejected event with the operation id', () => {
    const { job, events, headers } = target();
    answerRefusal(job, inProgress(2500, 'op-1'));
    expect(headers.get('Retry-After')).toBe('3');
    expect(events).toEqual([
      {
        procedure: 'orders.create',
        scope: 's',
        keyHash: 'h',
        requestId: null,
        type: 'rejected',
        reason: 'IDEMPOTENCY_REQUEST_IN_PROGRESS',
        operationId: 'op-1',
      },
    ]);
  });

  it("a 503 of the store: store-error with the store's error, then rejected", () => {
    const { job, events, headers } = target();
    const cause = new Error('ECONNREFUSED');
    answerRefusal(job, storeUnavailable(cause));
    expect(events.map((event) => event.type)).toEqual(['store-error', 'rejected']);
    expect(events[0]).toMatchObject({ operationId: null, error: cause });
    expect(headers.get('Retry-After')).toBe('1');
  });

  it('a refusal without a wait sets no Retry-After', () => {
    const { job, events, headers } = target();
    answerRefusal(job, reject('IDEMPOTENCY_BATCH_REFUSED', 'send it alone'));
    expect(headers.size).toBe(0);
    expect(events).toMatchObject([{ type: 'rejected', operationId: null }]);
  });

  it.each([
    ['a TRPCError of the handler', new TRPCError({ code: 'CONFLICT' })],
    ['an Error', new Error('boom')],
    ['null', null],
  ])('%s passes untouched', (_, error) => {
    const { job, events, headers } = target();
    answerRefusal(job, error);
    expect(events).toEqual([]);
    expect(headers.size).toBe(0);
  });
});
