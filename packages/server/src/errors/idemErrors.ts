/**
 * Every error idem raises on the server, in one place. Two kinds:
 *
 * - Answers to the client: `TRPCError`s carrying an {@link IdemRequestError} cause (`data.idem`),
 *   built by {@link reject} from a reason of the contract's reason table (which gives the status
 *   and the tRPC code), or plain 500s for a misused idem (a server bug to fix, never stored).
 * - Errors raised into an external-mode handler ({@link LostOwnershipError},
 *   {@link OutcomeUnknownError}): let them propagate. Branded, with guards, so a check survives two
 *   installed copies of this package (`isLostOwnershipError(e)`, not `instanceof`).
 *
 * Start-up misconfigurations are `TypeError`s thrown where the option is read.
 */
import { TRPCError } from '@trpc/server';
import type { IdemReason } from '@idem/contract';
import { idemTRPCError } from './IdemRequestError.js';

/**
 * Refuses a request for an idem reason: returns the error to throw, whose `data.idem` carries the
 * reason, `retryAfterMs` when the client is asked to wait, and the operation id. Pure: the one
 * place per request that catches it (`answerRefusal`, from `runRequest`) records the `rejected`
 * event and sets Retry-After.
 */
export function reject(
  reason: IdemReason,
  message: string,
  extra: { retryAfterMs?: number; operationId?: string } = {},
): TRPCError {
  return idemTRPCError(reason, message, extra);
}

/**
 * 409 `IDEMPOTENCY_REQUEST_IN_PROGRESS`: another request holds the key. `retryAfterMs` is the
 * app's `inProgressRetryAfterMs`.
 */
export function inProgress(retryAfterMs: number, operationId?: string): TRPCError {
  return reject(
    'IDEMPOTENCY_REQUEST_IN_PROGRESS',
    'a request with this Idempotency-Key is still in progress; retry after the delay',
    operationId === undefined ? { retryAfterMs } : { retryAfterMs, operationId },
  );
}

/** Milliseconds a client is asked to wait after the store failed. */
const STORE_RETRY_AFTER_MS = 1000;

/**
 * 503 `IDEMPOTENCY_STORE_UNAVAILABLE`: the store failed before anything was committed, so the
 * request may be retried with the same key. The store's error is the cause of the error's
 * `IdemRequestError` (for the `store-error` event), never on the wire.
 */
export function storeUnavailable(storeError: unknown): TRPCError {
  return idemTRPCError(
    'IDEMPOTENCY_STORE_UNAVAILABLE',
    'the idempotency store is unavailable; nothing was executed, retry with the same key',
    { retryAfterMs: STORE_RETRY_AFTER_MS },
    { cause: storeError },
  );
}

/** A 500 for idem used the wrong way in the server's code: never stored, the key is released. */
function misuse(message: string): TRPCError {
  return new TRPCError({ code: 'INTERNAL_SERVER_ERROR', message: `idem: ${message}` });
}

/** Server misuses idem detects per request (each a 500 naming the fix). */
export const idemMisuse = {
  notAMutation: (path: string, type: string) =>
    misuse(`${path} is a ${type}; only mutations take idempotency keys`),
  missingIdemRequest: () =>
    misuse('ctx.idemRequest is missing: spread idemContext(opts) into your createContext result'),
  noScope: (path: string) =>
    misuse(`scope() returned no scope for ${path}; idempotency keys are never global`),
  resumeScopeMismatch: (path: string, recordId: string) =>
    misuse(
      `the completer's context gives scope for ${path} that does not match record ${recordId}`,
    ),
  /**
   * What a step after idem gets when it reads the raw input. tRPC's input parsers read it: one
   * that runs after idem (`.concat(idem.procedure()).input(More)`, which tRPC merges into an
   * object input) would give the handler input the fingerprint never saw, so a reused key with a
   * different input would replay the first result. The request fails instead, before the handler
   * runs, and the key is released (a 500 is never stored).
   */
  inputAfterIdem: (path: string) =>
    misuse(
      `${path} reads its input after idem.procedure(): put every .input() before .concat(idem.procedure())`,
    ),
  /**
   * A handler's output the procedure's serializer cannot store (a BigInt with JSON, a cycle): it
   * could never be replayed, so in local mode it is the request's failure, a 500 (its writes roll
   * back, the key is released), not a store outage that invites the client to retry forever.
   */
  unstorableOutput: (path: string, cause: unknown) =>
    new TRPCError({
      code: 'INTERNAL_SERVER_ERROR',
      message: `idem: the output of ${path} cannot be stored for replay (${cause instanceof Error ? cause.message : String(cause)}): return data the serializer can write, or pass createIdempotency a serializer that can`,
      cause,
    }),
};

/**
 * Raised inside an external-mode handler when this worker no longer owns the record (taken over
 * by a retry or the completer, or cancelled): its result is discarded. Let it propagate; check it
 * with {@link isLostOwnershipError}.
 */
export class LostOwnershipError extends Error {
  readonly isLostOwnershipError = true;
  constructor(step: string) {
    super(`idem: lost ownership of the record before step "${step}" committed; result discarded`);
  }
}

/** True for a {@link LostOwnershipError}, from any copy of this package. */
export function isLostOwnershipError(value: unknown): value is LostOwnershipError {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { isLostOwnershipError?: unknown }).isLostOwnershipError === true
  );
}

/**
 * Raised inside an external-mode handler when an external call's outcome is unknown and cannot
 * be settled now: `settleBy: 'lookup'` (the step's `lookup` asks the remote before anything runs
 * again) or `'operator'` (no lookup: manual reconciliation). Let it propagate; check it with
 * {@link isOutcomeUnknownError}.
 */
export class OutcomeUnknownError extends Error {
  readonly isOutcomeUnknownError = true;
  constructor(
    readonly step: string,
    readonly settleBy: 'lookup' | 'operator',
    options?: { cause?: unknown },
  ) {
    super(
      settleBy === 'lookup'
        ? `the outcome of "${step}" is unknown; it will be looked up before anything runs again`
        : `the outcome of "${step}" is unknown and cannot be looked up; an operator must reconcile it`,
      options,
    );
  }
}

/** True for an {@link OutcomeUnknownError}, from any copy of this package. */
export function isOutcomeUnknownError(value: unknown): value is OutcomeUnknownError {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { isOutcomeUnknownError?: unknown }).isOutcomeUnknownError === true
  );
}
