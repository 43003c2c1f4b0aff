import { TRPCError } from '@trpc/server';
import { describe, expect, it } from 'vitest';
import type { IdemServerEvent } from '../telemetry/IdemServerEvent.js';
import {
  inProgress,
  isLostOwnershipError,
  isOutcomeUnknownError,
  LostOwnershipError,
  OutcomeUnknownError,
  storeUnavailable,
  type RejectTarget,
} from './idemErrors.js';
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

describe('refusals', () => {
  function target() {
    const events: IdemServerEvent[] = [];
    const headers = new Map<string, string>();
    const job: RejectTarget = {
      runtime: {
        emit: (event: IdemServerEvent) => void events.push(event),
        inProgressRetryAfterMs: 2500,
      },
      event: { procedure: 'orders.create', scope: 's', keyHash: 'h', requestId: null },
      request: { response: { headers } },
    };
    return { job, events, headers };
  }

  it('409 in progress: Retry-After in whole seconds, the reason in data.idem, one event', () => {
    const { job, events, headers } = target();
    const error = inProgress(job, 'op-1');
    expect(error.code).toBe('CONFLICT');
    expect(readIdemErrorCause(error)).toEqual({
      reason: 'IDEMPOTENCY_REQUEST_IN_PROGRESS',
      retryAfterMs: 2500,
      operationId: 'op-1',
    });
    expect(headers.get('Retry-After')).toBe('3');
    expect(events).toMatchObject([{ type: 'rejected', operationId: 'op-1' }]);
  });

  it('503 store unavailable: the cause goes to the event hook, not the error', () => {
    const { job, events } = target();
    const cause = new Error('ECONNREFUSED');
    const error = storeUnavailable(job, cause);
    expect(readIdemErrorCause(error)?.reason).toBe('IDEMPOTENCY_STORE_UNAVAILABLE');
    expect(error.message).not.toMatch(/ECONNREFUSED/);
    expect(events.map((event) => event.type)).toEqual(['store-error', 'rejected']);
  });
});
