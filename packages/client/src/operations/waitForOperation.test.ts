import { describe, expect, expectTypeOf, it } from 'vitest';
import type { RetryClock } from '../retry/RetryClock.js';
import {
  isOperationReleasedError,
  OperationReleasedError,
  OperationWaitTimeoutError,
  waitForOperation,
} from './waitForOperation.js';

/** A clock whose sleeps only move its own time forward. */
function virtualClock(): RetryClock & { slept: number[] } {
  let now = 0;
  const slept: number[] = [];
  return {
    slept,
    now: () => now,
    sleep: async (ms) => {
      slept.push(ms);
      now += ms;
    },
  };
}

type Status = { operationId: string; state: string; result?: { url: string } };

describe('waitForOperation', () => {
  it('reads the status until the operation is over, and returns it typed', async () => {
    const states = ['PENDING', 'IN_PROGRESS', 'COMPLETED'];
    const clock = virtualClock();
    const read = async ({ operationId }: { operationId: string }): Promise<Status> => {
      const state = states.shift()!;
      return state === 'COMPLETED'
        ? { operationId, state, result: { url: 'r/1' } }
        : { operationId, state };
    };
    const status = await waitForOperation(
      read,
      { operationId: 'op-1' },
      { clock, intervalMs: 100 },
    );
    expectTypeOf(status).toEqualTypeOf<Status>();
    expect(status).toEqual({ operationId: 'op-1', state: 'COMPLETED', result: { url: 'r/1' } });
    expect(clock.slept).toEqual([100, 100]);
  });

  it('gives up at its deadline, saying the work goes on', async () => {
    const clock = virtualClock();
    const read = async () => ({ state: 'IN_PROGRESS' });
    const waiting = waitForOperation(
      read,
      { operationId: 'op-2' },
      {
        clock,
        intervalMs: 400,
        timeoutMs: 1_000,
      },
    );
    await expect(waiting).rejects.toBeInstanceOf(OperationWaitTimeoutError);
    await expect(waiting).rejects.toThrow(/op-2 is still IN_PROGRESS at the deadline/);
    expect(clock.slept).toEqual([400, 400, 200]);
  });

  it('ends at once on a released operation, saying to resend the mutation with the same key', async () => {
    // RETRYABLE_FAILURE: the handler failed transiently and the server released the key. No
    // queue or completer takes that state up again; only the original mutation, sent again with
    // the same key, runs the work again. Waiting until the deadline could never see it move.
    const states = ['IN_PROGRESS', 'RETRYABLE_FAILURE', 'COMPLETED'];
    const clock = virtualClock();
    let reads = 0;
    const read = async ({ operationId }: { operationId: string }): Promise<Status> => {
      reads++;
      return { operationId, state: states.shift()! };
    };
    const error = await waitForOperation(
      read,
      { operationId: 'op-4' },
      { clock, intervalMs: 100, timeoutMs: 60_000 },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OperationReleasedError);
    expect(error).not.toBeInstanceOf(OperationWaitTimeoutError);
    expect(isOperationReleasedError(error)).toBe(true);
    expect(isOperationReleasedError(new OperationWaitTimeoutError('op-4', 'IN_PROGRESS'))).toBe(
      false,
    );
    expect((error as OperationReleasedError).operationId).toBe('op-4');
    expect((error as Error).message).toMatch(
      /op-4 was released after a transient failure \(RETRYABLE_FAILURE\).*send the original mutation again with the same input and idempotency key/,
    );
    expect(reads).toBe(2);
    expect(clock.slept).toEqual([100]);
  });

  it('refuses a pause or a deadline no timer can keep, before reading anything', async () => {
    let reads = 0;
    const read = async ({ operationId }: { operationId: string }): Promise<Status> => {
      reads++;
      return { operationId, state: 'PENDING' };
    };
    const accepted = { operationId: 'op-1' };
    await expect(waitForOperation(read, accepted, { intervalMs: 0 })).rejects.toThrow(
      'intervalMs must be a finite number of milliseconds > 0, got 0',
    );
    await expect(waitForOperation(read, accepted, { timeoutMs: 2 ** 31 })).rejects.toThrow(
      'timeoutMs must be at most 2147483647 ms (the longest a timer can wait), got 2147483648',
    );
    expect(reads).toBe(0);
  });

  it('stops on abort', async () => {
    const controller = new AbortController();
    controller.abort(new Error('left the page'));
    await expect(
      waitForOperation(
        async () => ({ state: 'PENDING' }),
        { operationId: 'op-3' },
        {
          signal: controller.signal,
        },
      ),
    ).rejects.toThrow('left the page');
  });
});
