import type { FailureKind } from '../types/Failure.js';

/**
 * Every reason `@idem/client` itself raises an error, with what it means. The only place these
 * facts live; {@link IdemClientError.code} is one of these keys.
 */
export const IDEM_CLIENT_ERROR_CODES = {
  /** A key from the caller or a key function is not 1 to 255 visible ASCII characters. Nothing was sent. */
  INVALID_KEY: 'invalid idempotency key',
  /** One attempt ran past its per-attempt timeout and was aborted. */
  ATTEMPT_TIMEOUT: 'attempt timed out',
  /** A response that is not tRPC JSON, such as a proxy's HTML 502 page. Carries `status`. */
  HTTP_ERROR: 'non-tRPC HTTP response',
  /** Every allowed attempt failed with a retryable failure. */
  ATTEMPTS_EXHAUSTED: 'attempts exhausted',
  /** The client's retry budget could not pay for another retry. */
  BUDGET_EXHAUSTED: 'retry budget exhausted',
  /** The overall deadline ran out, or the next backoff would have slept past it. */
  DEADLINE_EXCEEDED: 'deadline exceeded',
  /** The server asked to wait (`Retry-After`) longer than the deadline has left. */
  RETRY_AFTER_EXCEEDS_DEADLINE: 'Retry-After exceeds the remaining deadline',
} as const;

/** A code of {@link IDEM_CLIENT_ERROR_CODES}. */
export type IdemClientErrorCode = keyof typeof IDEM_CLIENT_ERROR_CODES;

/** The codes that end a retry loop: the error wraps the last attempt's error. */
export type IdemGiveUpCode = Extract<
  IdemClientErrorCode,
  'ATTEMPTS_EXHAUSTED' | 'BUDGET_EXHAUSTED' | 'DEADLINE_EXCEEDED' | 'RETRY_AFTER_EXCEEDS_DEADLINE'
>;

/** What an {@link IdemClientError} may carry besides its code. */
export interface IdemClientErrorDetails {
  /** HTTP status of the response (`HTTP_ERROR`). */
  status?: number;
  /** Milliseconds the response asked to wait, from `Retry-After` (`HTTP_ERROR`). */
  retryAfterMs?: number;
  /** Attempts made so far, counting the first (give-ups, `ATTEMPT_TIMEOUT`). */
  attempts?: number;
  /** How the last attempt failed (give-ups). */
  failure?: FailureKind;
  /** The last attempt's error (give-ups). */
  lastError?: unknown;
  /** The underlying error, if any. */
  cause?: unknown;
}

/**
 * The one error class of `@idem/client`. It is branded (`isIdemClientError`), so
 * {@link isIdemClientError} recognises it across two installed copies of the package; never compare
 * `error.name`.
 *
 * A tRPC call rejects with a `TRPCClientError`, as always; when idem is the reason (a timeout, a
 * give-up, a proxy page), this error is its `cause`, and a give-up keeps the last server error's
 * `shape` and `data` on the `TRPCClientError`.
 */
export class IdemClientError extends Error {
  /** Brand checked by {@link isIdemClientError}. */
  public readonly isIdemClientError = true;
  public readonly code: IdemClientErrorCode;
  public readonly status: number | undefined;
  public readonly retryAfterMs: number | undefined;
  public readonly attempts: number | undefined;
  public readonly failure: FailureKind | undefined;
  public readonly lastError: unknown;

  constructor(code: IdemClientErrorCode, message: string, details: IdemClientErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'IdemClientError';
    this.code = code;
    this.status = details.status;
    this.retryAfterMs = details.retryAfterMs;
    this.attempts = details.attempts;
    this.failure = details.failure;
    this.lastError = details.lastError;
  }
}

/** Whether `value` is an {@link IdemClientError}, by brand (survives duplicate installs). */
export function isIdemClientError(value: unknown): value is IdemClientError {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { isIdemClientError?: unknown }).isIdemClientError === true
  );
}

/**
 * Finds the {@link IdemClientError} in an error or its `cause` chain (a `TRPCClientError` carries
 * it as `cause`). Returns `undefined` when idem did not cause the error.
 */
export function findIdemClientError(error: unknown): IdemClientError | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 8 && current !== null && typeof current === 'object'; depth++) {
    if (isIdemClientError(current)) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}
