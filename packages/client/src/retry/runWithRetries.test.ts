import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { VirtualClock } from '../../test/fixtures/VirtualClock.js';
import { fullJitter } from './backoff/fullJitter.js';
import type { OperationKind } from '../types/RetryDecision.js';
import { isIdemClientError } from '../errors/IdemClientError.js';
import type { IdemGiveUpEvent, IdemRetryEvent } from '../telemetry/IdemEvent.js';
import { RetryBudget } from './RetryBudget.js';
import { runWithRetries, type AttemptContext, type RetryLoopOptions } from './runWithRetries.js';

/** An error shaped like a tRPC server error with this HTTP status. */
const httpError = (httpStatus: number, idem?: object) => ({
  data: { httpStatus, ...(idem ? { idem } : {}) },
});

function setup(overrides: Partial<RetryLoopOptions<string>> & { operation?: OperationKind } = {}) {
  const clock = new VirtualClock();
  const retries: IdemRetryEvent[] = [];
  const giveUps: IdemGiveUpEvent[] = [];
  const contexts: AttemptContext[] = [];
  let ids = 0;
  const { operation = 'idempotent-mutation', ...rest } = overrides;
  const options: RetryLoopOptions<string> = {
    call: { path: 'orders.create', operation, idempotencyKey: 'k' },
    attempt: async () => 'ok',
    maxAttempts: 3,
    attemptTimeoutMs: 10_000,
    deadlineMs: 30_000,
    backoff: fullJitter(),
    budget: new RetryBudget(),
    retryOn500: false,
    clock,
    random: () => 0.5,
    newRequestId: () => `req-${++ids}`,
    onRetry: (event) => retries.push(event),
    onGiveUp: (event) => giveUps.push(event),
    ...rest,
  };
  const wrapAttempt = options.attempt;
  options.attempt = (context) => {
    contexts.push(context);
    return wrapAttempt(context);
  };
  return { clock, options, retries, giveUps, contexts };
}

/** An attempt that fails with these errors in turn, then succeeds. */
function failing(...errors: unknown[]) {
  let n = 0;
  return async () => {
    const error = errors[n++];
    if (error !== undefined) throw error;
    return 'ok';
  };
}

describe('runWithRetries', () => {
  it('retries a 503 burst, reports every retry, and succeeds', async () => {
    const budget = new RetryBudget();
    const { clock, options, retries, giveUps, contexts } = setup({
      attempt: failing(httpError(503), httpError(503)),
      budget,
    });
    await expect(clock.run(runWithRetries(options))).resolves.toBe('ok');
    expect(retries.map((e) => [e.attempt, e.failure, e.status, e.delayMs, e.requestId])).toEqual([
      [1, 'http-503', 503, 250, 'req-1'],
      [2, 'http-503', 503, 500, 'req-2'],
    ]);
    expect(contexts.map((c) => c.requestId)).toEqual(['req-1', 'req-2', 'req-3']);
    expect(giveUps).toEqual([]);
    expect(budget.tokens).toBe(495); // paid 5 + 5, the successful retry got its 5 back
  });

  it('sleeps the longer of the backoff and the server’s Retry-After', async () => {
    const inProgress = httpError(409, {
      reason: 'IDEMPOTENCY_REQUEST_IN_PROGRESS',
      retryAfterMs: 4000,
    });
    const { clock, options, retries } = setup({ attempt: failing(inProgress) });
    await clock.run(runWithRetries(options));
    expect(retries[0]).toMatchObject({ failure: 'in-progress', delayMs: 4000 });
  });

  it('gives up at once when Retry-After exceeds the remaining deadline, and never sleeps it', async () => {
    const slowDown = httpError(429);
    const { clock, options, giveUps } = setup({
      deadlineMs: 5_000,
      attempt: failing({
        ...slowDown,
        meta: { response: new Response(null, { headers: { 'Retry-After': '60' } }) },
      }),
    });
    const error = await clock.run(runWithRetries(options)).catch((e: unknown) => e);
    expect(isIdemClientError(error) && error.code).toBe('RETRY_AFTER_EXCEEDS_DEADLINE');
    expect(giveUps.map((e) => e.because)).toEqual(['retry-after-exceeds-deadline']);
    expect(clock.sleeps.filter(([, ms]) => ms === 60_000)).toEqual([]);
  });

  it('passes a non-retryable error through untouched', async () => {
    const reused = httpError(422, { reason: 'IDEMPOTENCY_KEY_REUSED' });
    const { clock, options, giveUps, contexts } = setup({ attempt: failing(reused) });
    await expect(clock.run(runWithRetries(options))).rejects.toBe(reused);
    expect(contexts).toHaveLength(1);
    expect(giveUps.map((e) => [e.because, e.failure])).toEqual([['not-retryable', 'key-reused']]);
  });

  it('treats an attempt that throws instead of rejecting as a failed attempt', async () => {
    let calls = 0;
    const { clock, options, retries } = setup({
      attempt: () => {
        calls += 1;
        if (calls === 1) throw httpError(503);
        return Promise.resolve('ok');
      },
    });
    await expect(clock.run(runWithRetries(options))).resolves.toBe('ok');
    expect(retries.map((e) => e.failure)).toEqual(['http-503']);
  });

  it("stops following the caller's signal once the call has settled", async () => {
    const caller = new AbortController();
    const listening: string[] = [];
    const signal = new Proxy(caller.signal, {
      get(target, name) {
        const value = Reflect.get(target, name) as unknown;
        if (name === 'addEventListener')
          return (...args: [string, () => void]) => {
            listening.push('add');
            target.addEventListener(...args);
          };
        if (name === 'removeEventListener')
          return (...args: [string, () => void]) => {
            listening.push('remove');
            target.removeEventListener(...args);
          };
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const { clock, options } = setup({ signal });
    await expect(clock.run(runWithRetries(options))).resolves.toBe('ok');
    expect(listening).toEqual(['add', 'remove']);
  });

  it('never resends a mutation without a key that may have reached the server', async () => {
    const { clock, options, giveUps, contexts } = setup({
      operation: 'mutation',
      attempt: failing(httpError(503)),
    });
    await expect(clock.run(runWithRetries(options))).rejects.toEqual(httpError(503));
    expect(contexts).toHaveLength(1);
    expect(giveUps.map((e) => e.because)).toEqual(['unsafe']);
  });

  it('stops after maxAttempts with ATTEMPTS_EXHAUSTED carrying the last error', async () => {
    const { clock, options, contexts } = setup({
      attempt: failing(httpError(502), httpError(503), httpError(504)),
    });
    const error = await clock.run(runWithRetries(options)).catch((e: unknown) => e);
    expect(contexts).toHaveLength(3);
    expect(isIdemClientError(error) && [error.code, error.attempts, error.failure]).toEqual([
      'ATTEMPTS_EXHAUSTED',
      3,
      'http-504',
    ]);
    expect(isIdemClientError(error) && error.lastError).toEqual(httpError(504));
  });

  it('stops retrying when the budget cannot pay', async () => {
    const budget = new RetryBudget({ capacity: 7 });
    const { clock, options, giveUps, contexts } = setup({
      budget,
      attempt: failing(httpError(503), httpError(503), httpError(503)),
    });
    const error = await clock.run(runWithRetries(options)).catch((e: unknown) => e);
    expect(isIdemClientError(error) && error.code).toBe('BUDGET_EXHAUSTED');
    expect(contexts).toHaveLength(2);
    expect(giveUps.map((e) => e.because)).toEqual(['budget-exhausted']);
    expect(budget.tokens).toBe(2);
  });

  it('aborts an attempt that outlives its timeout, and retries it', async () => {
    const seen: AbortSignal[] = [];
    let n = 0;
    const { clock, options, retries } = setup({
      attemptTimeoutMs: 2_000,
      attempt: async ({ signal }) => {
        seen.push(signal);
        if (n++ === 0) await new Promise<never>(() => {}); // hangs
        return 'ok';
      },
    });
    await expect(clock.run(runWithRetries(options))).resolves.toBe('ok');
    expect(seen[0]?.aborted).toBe(true);
    expect(retries[0]).toMatchObject({ failure: 'timeout', attempt: 1 });
  });

  it('stops during a backoff sleep as soon as the caller aborts', async () => {
    const caller = new AbortController();
    const { clock, options } = setup({
      signal: caller.signal,
      random: () => 0.99,
      attempt: failing(httpError(503)),
      onRetry: () => queueMicrotask(() => caller.abort(new Error('user left'))),
    });
    const started = clock.now();
    await expect(clock.run(runWithRetries(options))).rejects.toThrow('user left');
    expect(clock.sleeps.at(-1)).toEqual([started, 495]); // the backoff sleep had begun...
    expect(clock.now() - started).toBe(0); // ...and ended at once, in virtual time
  });

  it('stops during an attempt as soon as the caller aborts, and aborts the attempt', async () => {
    const caller = new AbortController();
    let attemptSignal: AbortSignal | undefined;
    const { clock, options, giveUps } = setup({
      signal: caller.signal,
      attempt: ({ signal }) => {
        attemptSignal = signal;
        queueMicrotask(() => caller.abort(new Error('cancelled')));
        return new Promise<never>(() => {});
      },
    });
    await expect(clock.run(runWithRetries(options))).rejects.toThrow('cancelled');
    expect(attemptSignal?.aborted).toBe(true);
    expect(giveUps).toEqual([]);
  });

  it('cancels a timed-out attempt through onAbort, and a signal read late is already aborted', async () => {
    const cancelled: unknown[] = [];
    let n = 0;
    const { clock, options, contexts } = setup({
      attemptTimeoutMs: 2_000,
      attempt: (context) => {
        if (n++ > 0) return Promise.resolve('ok');
        context.onAbort((reason) => cancelled.push(reason));
        return new Promise<never>(() => {}); // hangs, and never reads its signal
      },
    });
    await expect(clock.run(runWithRetries(options))).resolves.toBe('ok');
    expect(cancelled).toHaveLength(1);
    expect(isIdemClientError(cancelled[0]) && cancelled[0].code).toBe('ATTEMPT_TIMEOUT');
    expect(contexts[0]?.signal.aborted).toBe(true);
    expect(contexts[0]?.signal.reason).toBe(cancelled[0]);
  });

  it('cancels an attempt through onAbort when the caller aborts, once per listener', async () => {
    const caller = new AbortController();
    const cancelled: unknown[] = [];
    const { clock, options } = setup({
      signal: caller.signal,
      attempt: ({ onAbort }) => {
        onAbort((reason) => cancelled.push(['first', reason]));
        onAbort((reason) => cancelled.push(['second', reason]));
        queueMicrotask(() => caller.abort(new Error('cancelled')));
        return new Promise<never>(() => {});
      },
    });
    const error = await clock.run(runWithRetries(options)).catch((e: unknown) => e);
    expect(error).toEqual(new Error('cancelled'));
    expect(cancelled).toEqual([
      ['first', error],
      ['second', error],
    ]);
  });

  it('never cancels an attempt that succeeded', async () => {
    const cancelled: unknown[] = [];
    const { clock, options, contexts } = setup({
      attempt: async ({ onAbort }) => {
        onAbort((reason) => cancelled.push(reason));
        return 'ok';
      },
    });
    await expect(clock.run(runWithRetries(options))).resolves.toBe('ok');
    expect(cancelled).toEqual([]);
    expect(contexts[0]?.signal.aborted).toBe(false);
  });

  it('never runs past the deadline, whatever the latencies, failures and waits', async () => {
    const failure = fc.oneof(
      fc.constantFrom(502, 503, 504, 429).map((s) => httpError(s)),
      fc
        .integer({ min: 0, max: 20_000 })
        .map((retryAfterMs) =>
          httpError(409, { reason: 'IDEMPOTENCY_REQUEST_IN_PROGRESS', retryAfterMs }),
        ),
    );
    const step = fc.record({
      latencyMs: fc.integer({ min: 0, max: 20_000 }),
      failure,
      succeeds: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 60_000 }),
        fc.integer({ min: 1, max: 20_000 }),
        fc.integer({ min: 1, max: 8 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        fc.array(step, { minLength: 8, maxLength: 8 }),
        async (deadlineMs, attemptTimeoutMs, maxAttempts, r, steps) => {
          let n = 0;
          const clock = new VirtualClock();
          const { options, contexts } = setup({
            clock,
            deadlineMs,
            attemptTimeoutMs,
            maxAttempts,
            random: () => r,
            budget: new RetryBudget(),
            attempt: async ({ signal }) => {
              const s = steps[n++ % steps.length]!;
              await clock.sleep(s.latencyMs, signal);
              if (s.succeeds) return 'ok';
              throw s.failure;
            },
          });
          const start = clock.now();
          await clock.run(runWithRetries(options)).catch(() => undefined);
          const elapsed = clock.now() - start;
          return (
            elapsed <= deadlineMs &&
            contexts.length <= maxAttempts &&
            contexts.every((c) => c.remainingMs > 0 && c.remainingMs <= deadlineMs)
          );
        },
      ),
      { numRuns: 200 },
    );
  });

  it('sends the remaining budget, not the configured one, on later attempts', async () => {
    const { clock, options, contexts } = setup({
      deadlineMs: 10_000,
      attemptTimeoutMs: 3_000,
      attempt: async ({ signal }) => {
        await clock.sleep(1_000, signal);
        if (contexts.length < 3) throw httpError(503);
        return 'ok';
      },
    });
    await clock.run(runWithRetries(options));
    expect(contexts.map((c) => c.remainingMs)).toEqual([10_000, 8_750, 7_250]);
  });
});
