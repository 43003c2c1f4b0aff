import type { Backoff } from './backoff/Backoff.js';
import type { Failure } from '../types/Failure.js';
import { classifyFailure } from './classifyFailure.js';
import { decideRetry } from './decideRetry.js';
import { IdemClientError, type IdemGiveUpCode } from '../errors/IdemClientError.js';
import type {
  GiveUpReason,
  IdemCallInfo,
  IdemFailureInfo,
  IdemGiveUpEvent,
  IdemRetryEvent,
} from '../telemetry/IdemEvent.js';
import type { RetryBudget } from './RetryBudget.js';
import { systemClock, type RetryClock } from './RetryClock.js';
import { CallStop } from './CallStop.js';

/** What one attempt is given. */
export interface AttemptContext {
  /** Counting the first attempt as 1. */
  attempt: number;
  /** Fresh for every attempt (`X-Request-Id`). */
  requestId: string;
  /**
   * Aborts when the attempt times out or the caller aborts. Made on first read: an AbortSignal
   * costs microseconds to make (and to listen to), and a transport cancelled through
   * {@link onAbort} never needs one. Read after the attempt failed, it is already aborted.
   */
  readonly signal: AbortSignal;
  /**
   * Registers `cancel`, called with the reason when the attempt times out or the caller aborts
   * (right after {@link signal} aborts): cancellation without an AbortSignal.
   */
  onAbort(cancel: (reason: unknown) => void): void;
  /** Milliseconds left of the overall deadline when the attempt starts (`Idempotency-Timeout-Ms`). */
  remainingMs: number;
}

/** The resolved policy of one call. The link builds it; tests build it directly. */
export interface RetryLoopOptions<T> {
  call: IdemCallInfo;
  /** Runs one attempt. Must settle; should stop work when `signal` aborts. */
  attempt: (context: AttemptContext) => Promise<T>;
  maxAttempts: number;
  attemptTimeoutMs: number;
  deadlineMs: number;
  backoff: Backoff;
  budget: RetryBudget;
  retryOn500: boolean;
  clock: RetryClock;
  random: () => number;
  newRequestId: () => string;
  /**
   * Stops the loop at once, in an attempt or a sleep: the caller's signal, or a {@link CallStop}
   * (the link's: the caller's signal and tRPC's unsubscribe, without an AbortController per call).
   */
  signal?: AbortSignal | CallStop | null | undefined;
  onRetry?: ((event: IdemRetryEvent) => void) | undefined;
  onGiveUp?: ((event: IdemGiveUpEvent) => void) | undefined;
}

type Outcome<T> = { ok: true; value: T } | { ok: false; error: unknown };

/**
 * The retry loop, free of tRPC: attempts, per-attempt timeout, one deadline for the whole call
 * (never reset), backoff, `Retry-After`, and the shared budget.
 *
 * Resolves with the first success. Rejects with:
 * - the caller's abort reason, as soon as `signal` aborts;
 * - the last error as it is, when it is not retried (`not-retryable`, `unsafe`);
 * - an {@link IdemClientError} give-up (`ATTEMPTS_EXHAUSTED`, `BUDGET_EXHAUSTED`,
 *   `DEADLINE_EXCEEDED`, `RETRY_AFTER_EXCEEDS_DEADLINE`) whose `lastError` is the last error.
 *
 * It never sleeps past the deadline: a sleep that would end at or after it gives up instead, and
 * each attempt's timeout is the smaller of `attemptTimeoutMs` and what the deadline has left.
 */
export function runWithRetries<T>(options: RetryLoopOptions<T>): Promise<T> {
  const given = options.signal;
  if (given instanceof CallStop) return retryLoop(options, given);
  const stop = new CallStop(given);
  return retryLoop(options, stop).finally(() => stop.dispose());
}

async function retryLoop<T>(options: RetryLoopOptions<T>, stop: CallStop): Promise<T> {
  const { clock, budget } = options;
  const deadlineAt = clock.now() + options.deadlineMs;
  let lastRetryCost = 0;
  let previousDelayMs: number | undefined;

  for (let attempt = 1; ; attempt++) {
    if (stop.aborted) throw stop.reason;
    const requestId = options.newRequestId();
    const remainingMs = deadlineAt - clock.now();
    const outcome = await runAttempt(options, stop, {
      attempt,
      requestId,
      remainingMs,
      timeoutMs: Math.min(options.attemptTimeoutMs, remainingMs),
    });
    if (outcome.ok) {
      budget.recordSuccess(lastRetryCost);
      return outcome.value;
    }
    if (stop.aborted) throw stop.reason;

    const error = outcome.error;
    const now = clock.now();
    const failure = classifyFailure(error, now);
    const info = failureInfo(attempt, requestId, failure, error);
    const left = deadlineAt - now;
    const giveUp = (because: GiveUpReason, code?: IdemGiveUpCode, detail?: string): never => {
      notify(() =>
        options.onGiveUp?.({
          type: 'give-up',
          ...options.call,
          ...info,
          because,
          remainingMs: left,
        }),
      );
      if (code === undefined) throw error;
      throw new IdemClientError(
        code,
        `${options.call.path}: gave up after ${attempt} attempt${attempt === 1 ? '' : 's'} (${failure.kind}): ${detail}`,
        { attempts: attempt, failure: failure.kind, lastError: error, cause: error },
      );
    };

    const decision = decideRetry(failure, options.call.operation, options);
    if (!decision.retry) return giveUp(decision.because);
    if (attempt >= options.maxAttempts) {
      return giveUp(
        'attempts-exhausted',
        'ATTEMPTS_EXHAUSTED',
        `${options.maxAttempts} attempts allowed`,
      );
    }
    if (failure.retryAfterMs !== undefined && failure.retryAfterMs >= left) {
      return giveUp(
        'retry-after-exceeds-deadline',
        'RETRY_AFTER_EXCEEDS_DEADLINE',
        `the server asked to wait ${failure.retryAfterMs} ms, the deadline has ${Math.max(0, left)} ms left`,
      );
    }
    const backoffMs = options.backoff({
      retry: attempt - 1,
      previousDelayMs,
      random: options.random,
    });
    const delayMs = Math.max(backoffMs, failure.retryAfterMs ?? 0);
    if (delayMs >= left) {
      return giveUp(
        'deadline-exceeded',
        'DEADLINE_EXCEEDED',
        `${options.deadlineMs} ms deadline, ${Math.max(0, left)} ms left, next sleep ${delayMs} ms`,
      );
    }
    const cost = budget.tryAcquire(failure.kind);
    if (cost === undefined) {
      return giveUp(
        'budget-exhausted',
        'BUDGET_EXHAUSTED',
        `a retry costs ${budget.costOf(failure.kind)} tokens, ${budget.tokens} left`,
      );
    }
    lastRetryCost = cost;
    previousDelayMs = backoffMs;
    notify(() =>
      options.onRetry?.({
        type: 'retry',
        ...options.call,
        ...info,
        delayMs,
        remainingMs: left,
        budgetTokens: budget.tokens,
      }),
    );
    await clock.sleep(delayMs, stop.signal());
    // A timer that fired late must not start an attempt with no time left.
    if (deadlineAt - clock.now() <= 0) {
      return giveUp(
        'deadline-exceeded',
        'DEADLINE_EXCEEDED',
        `${options.deadlineMs} ms deadline ran out during the backoff sleep`,
      );
    }
  }
}

function failureInfo(
  attempt: number,
  requestId: string,
  failure: Failure,
  error: unknown,
): IdemFailureInfo {
  const info: IdemFailureInfo = { attempt, requestId, failure: failure.kind, error };
  if (failure.status !== undefined) info.status = failure.status;
  if (failure.reason !== undefined) info.reason = failure.reason;
  return info;
}

/**
 * Why an attempt's timer is cancelled once the attempt settled. Given as the abort reason, so that
 * no `DOMException` (built with a stack trace for an `abort()` without one) is made per attempt.
 */
const ATTEMPT_SETTLED = Symbol('idem: the attempt settled');

/**
 * Runs one attempt against its timeout and the call's stop. The attempt's own signal aborts when
 * it times out or the call stops, so the transport cancels its request.
 *
 * Not `async`, and the attempt is called at once rather than from a `.then`: on the link's path
 * every promise and microtask is paid per call.
 */
function runAttempt<T>(
  options: RetryLoopOptions<T>,
  stop: CallStop,
  context: Pick<AttemptContext, 'attempt' | 'requestId' | 'remainingMs'> & { timeoutMs: number },
): Promise<Outcome<T>> {
  const { timeoutMs } = context;
  const limitMs = Math.max(0, timeoutMs);
  const attemptContext = new Attempt(context.attempt, context.requestId, context.remainingMs);

  return new Promise<Outcome<T>>((resolve) => {
    let settled = false;
    let cancelTimer: () => void = () => {};
    const settle = (result: Outcome<T>) => {
      if (settled) return;
      settled = true;
      cancelTimer();
      stop.onStop(undefined);
      if (!result.ok) attemptContext.abort(result.error);
      resolve(result);
    };
    stop.onStop((reason) => settle({ ok: false, error: reason }));
    const timedOut = () =>
      settle({
        ok: false,
        error: new IdemClientError(
          'ATTEMPT_TIMEOUT',
          `${options.call.path}: attempt ${context.attempt} timed out after ${limitMs} ms`,
          { attempts: context.attempt },
        ),
      });
    if (options.clock === systemClock) {
      // The real clock's timer, without the AbortController and listener its `sleep` needs: one
      // fewer AbortSignal per attempt (the link's largest per-call cost in the bench's profile).
      const timer = setTimeout(timedOut, limitMs);
      cancelTimer = () => clearTimeout(timer);
    } else {
      const timer = new AbortController();
      options.clock.sleep(limitMs, timer.signal).then(timedOut, () => {});
      cancelTimer = () => timer.abort(ATTEMPT_SETTLED);
    }
    let running: Promise<T>;
    try {
      running = options.attempt(attemptContext);
    } catch (error) {
      // An attempt that throws instead of rejecting fails the same way.
      settle({ ok: false, error });
      return;
    }
    // `Promise.resolve` returns a native promise as it is, and adopts anything else.
    Promise.resolve(running).then(
      (value) => settle({ ok: true, value }),
      (error: unknown) => settle({ ok: false, error }),
    );
  });
}

/**
 * One attempt's {@link AttemptContext}. A class, not an object literal: a getter in a literal
 * made per attempt cost more (allocation and GC) than the AbortSignal it saves.
 */
class Attempt implements AttemptContext {
  /** Made only when the attempt reads `signal`, or when the attempt fails. */
  private controller: AbortController | undefined;
  private cancel: ((reason: unknown) => void) | undefined;

  constructor(
    readonly attempt: number,
    readonly requestId: string,
    readonly remainingMs: number,
  ) {}

  get signal(): AbortSignal {
    return (this.controller ??= new AbortController()).signal;
  }

  /** An arrow property, so that it can be passed on unbound. */
  readonly onAbort = (cancel: (reason: unknown) => void): void => {
    const previous = this.cancel;
    this.cancel = previous
      ? (reason) => {
          previous(reason);
          cancel(reason);
        }
      : cancel;
  };

  /** The attempt timed out or the caller aborted: aborts `signal`, then calls the `onAbort`s. */
  abort(reason: unknown): void {
    (this.controller ??= new AbortController()).abort(reason);
    if (!this.cancel) return;
    try {
      this.cancel(reason);
    } catch (error) {
      // As a throwing abort listener would: reported, never the attempt's outcome.
      queueMicrotask(() => {
        throw error;
      });
    }
  }
}

/** Runs an observer hook; a hook that throws must never change the call's outcome. */
function notify(hook: () => void): void {
  try {
    hook();
  } catch {
    // Observability is best effort; the retry loop goes on.
  }
}
