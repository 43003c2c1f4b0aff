import { systemClock, type RetryClock } from '../retry/RetryClock.js';
import { timerMs } from '../retry/assertOptions.js';

/** The states in which an operation is over (or needs a person): waiting ends there. */
const SETTLED = new Set(['COMPLETED', 'TERMINAL_FAILURE', 'NEEDS_RECONCILIATION']);

/**
 * The state of work released after a transient failure. Nothing on the server picks it up again:
 * the queue takes PENDING work, the completer abandoned IN_PROGRESS and OUTCOME_UNKNOWN work;
 * only the original mutation, sent again with the same key, runs it again (or an operator).
 */
const RELEASED = 'RETRYABLE_FAILURE';

/** Options of {@link waitForOperation}. */
export interface WaitForOperationOptions {
  /** Milliseconds to wait in all, from the call. Defaults to 30 000. */
  timeoutMs?: number;
  /** Milliseconds between two status reads. Defaults to 500. */
  intervalMs?: number;
  /** Stops waiting (rejects with its reason), also during a pause. */
  signal?: AbortSignal;
  /** The clock, for tests. Defaults to {@link systemClock}. */
  clock?: RetryClock;
}

/** Raised when an operation is still running at the end of {@link waitForOperation}'s deadline. */
export class OperationWaitTimeoutError extends Error {
  readonly isOperationWaitTimeoutError = true;
  constructor(
    readonly operationId: string,
    readonly lastState: string,
  ) {
    super(`operation ${operationId} is still ${lastState} at the deadline; poll it again later`);
    this.name = 'OperationWaitTimeoutError';
  }
}

/**
 * Raised when the operation was released after a transient failure (`RETRYABLE_FAILURE`): no
 * worker resumes it, so waiting longer cannot help. Send the original mutation again, with the
 * same input and the same idempotency key; that request runs the work again.
 */
export class OperationReleasedError extends Error {
  readonly isOperationReleasedError = true;
  constructor(readonly operationId: string) {
    super(
      `operation ${operationId} was released after a transient failure (${RELEASED}) and nothing runs it again on its own: send the original mutation again with the same input and idempotency key`,
    );
    this.name = 'OperationReleasedError';
  }
}

/** Whether `value` is an {@link OperationReleasedError}, by brand (survives duplicate installs). */
export function isOperationReleasedError(value: unknown): value is OperationReleasedError {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { isOperationReleasedError?: unknown }).isOperationReleasedError === true
  );
}

/**
 * Waits for long-running work (`respond: 'accepted'`) to end, reading its status until it is
 * COMPLETED, TERMINAL_FAILURE or NEEDS_RECONCILIATION, within one deadline. Typed by the status
 * query you pass, e.g. the one mounted with `idem.operationStatusQuery`:
 *
 *   const accepted = await client.jobs.export.mutate(input); // { operationId, state }
 *   const status = await waitForOperation(client.jobs.status.query, accepted, { timeoutMs: 60_000 });
 *   if (status.state === 'COMPLETED') use(status.result);
 *
 * Rejects with {@link OperationWaitTimeoutError} at the deadline (the work goes on: poll again),
 * with {@link OperationReleasedError} as soon as the work is released after a transient failure
 * (RETRYABLE_FAILURE: nothing resumes it; resend the original mutation with the same key), with
 * the status query's own error when it fails, and with the signal's reason on abort.
 */
export async function waitForOperation<TStatus extends { state: string }>(
  readStatus: (
    input: { operationId: string },
    options?: { signal?: AbortSignal },
  ) => Promise<TStatus>,
  accepted: { operationId: string },
  options: WaitForOperationOptions = {},
): Promise<TStatus> {
  const clock = options.clock ?? systemClock;
  const deadline = clock.now() + timerMs('timeoutMs', options.timeoutMs ?? 30_000);
  const interval = timerMs('intervalMs', options.intervalMs ?? 500);
  const { operationId } = accepted;
  for (;;) {
    options.signal?.throwIfAborted();
    const status = await readStatus(
      { operationId },
      options.signal ? { signal: options.signal } : undefined,
    );
    if (SETTLED.has(status.state)) return status;
    if (status.state === RELEASED) throw new OperationReleasedError(operationId);
    const left = deadline - clock.now();
    if (left <= 0) throw new OperationWaitTimeoutError(operationId, status.state);
    await clock.sleep(Math.min(interval, left), options.signal);
  }
}
