import { z } from 'zod';

/**
 * Every reason idem can give for refusing or deferring a request, with the HTTP status and tRPC
 * code it travels under. This table is the only place these facts live.
 *
 * `retryable` is the client's rule: may the same request, with the same key, be sent again?
 */
export const IDEM_REASON_TABLE = {
  /** The procedure requires a key and the request carried none. */
  IDEMPOTENCY_KEY_MISSING: { httpStatus: 400, trpcCode: 'BAD_REQUEST', retryable: false },
  /** The key is empty, too long, has characters outside 0x21-0x7E, or the header was repeated. */
  IDEMPOTENCY_KEY_INVALID: { httpStatus: 400, trpcCode: 'BAD_REQUEST', retryable: false },
  /**
   * The input cannot be stored or fingerprinted faithfully: a string PostgreSQL cannot store in
   * `text` (U+0000, NUL, in a value or an object key), a value the fingerprint cannot tell apart
   * (a function, a class instance without `toJSON`, a circular structure), or, in external mode,
   * a value the configured serializer does not carry (a Map with the JSON serializer). Refused
   * before the key is claimed, so nothing is stored.
   */
  IDEMPOTENCY_INPUT_UNSTORABLE: { httpStatus: 400, trpcCode: 'BAD_REQUEST', retryable: false },
  /**
   * A batch request (`?batch=1`) contains an idempotent mutation. A batch shares one set of
   * headers, so its items cannot carry one key each: send keyed mutations one per request. The
   * whole batch is refused and none of its items runs.
   */
  IDEMPOTENCY_BATCH_REFUSED: { httpStatus: 400, trpcCode: 'BAD_REQUEST', retryable: false },
  /** The key was used before, in this scope and procedure, with a different input. */
  IDEMPOTENCY_KEY_REUSED: { httpStatus: 422, trpcCode: 'UNPROCESSABLE_CONTENT', retryable: false },
  /** The first request with this key is still running; wait `retryAfterMs` and retry. */
  IDEMPOTENCY_REQUEST_IN_PROGRESS: { httpStatus: 409, trpcCode: 'CONFLICT', retryable: true },
  /** The key store could not be reached; nothing was executed or stored. */
  IDEMPOTENCY_STORE_UNAVAILABLE: {
    httpStatus: 503,
    trpcCode: 'SERVICE_UNAVAILABLE',
    retryable: true,
  },
  /**
   * An external call's outcome is unknown and cannot be looked up: an operator must reconcile the
   * record before anything runs again. Retrying does not help.
   */
  IDEMPOTENCY_OUTCOME_UNKNOWN: { httpStatus: 409, trpcCode: 'CONFLICT', retryable: false },
  /**
   * An external call's outcome became unknown (it timed out), and the remote system can be asked:
   * retry with the same key after `retryAfterMs`; the retry looks the outcome up before it calls
   * again, and never calls twice.
   */
  IDEMPOTENCY_OUTCOME_LOOKUP_PENDING: {
    httpStatus: 503,
    trpcCode: 'SERVICE_UNAVAILABLE',
    retryable: true,
  },
  /**
   * Long-running work is queued and the queue is over its configured depth: nothing was stored;
   * retry with the same key after `retryAfterMs`.
   */
  IDEMPOTENCY_QUEUE_FULL: { httpStatus: 503, trpcCode: 'SERVICE_UNAVAILABLE', retryable: true },
  /** The replayed result referred to a resource that has been deleted since. */
  IDEMPOTENCY_RESOURCE_GONE: { httpStatus: 404, trpcCode: 'NOT_FOUND', retryable: false },
  /** The stored result cannot be replayed (a secret shown once); the first response was final. */
  IDEMPOTENCY_REPLAY_UNAVAILABLE: { httpStatus: 409, trpcCode: 'CONFLICT', retryable: false },
} as const satisfies Record<string, { httpStatus: number; trpcCode: string; retryable: boolean }>;

export const idemReasonSchema = z.enum(
  Object.keys(IDEM_REASON_TABLE) as [IdemReason, ...IdemReason[]],
);

/** A machine-readable reason from {@link IDEM_REASON_TABLE}. */
export type IdemReason = keyof typeof IDEM_REASON_TABLE;

/** The tRPC error code a reason travels under. */
export type IdemTrpcCode = (typeof IDEM_REASON_TABLE)[IdemReason]['trpcCode'];

/**
 * The typed `data.idem` field of a tRPC error raised by idem. A client reads the reason here
 * instead of parsing messages; the two conflicts (422 reused, 409 in progress) differ by reason.
 */
export const idemErrorDataSchema = z.object({
  reason: idemReasonSchema,
  /** Milliseconds to wait before retrying, when the reason is retryable. */
  retryAfterMs: z.number().int().nonnegative().optional(),
  /** The stable operation id of the record, when one exists (for support and logs). */
  operationId: z.string().optional(),
});
export type IdemErrorData = z.infer<typeof idemErrorDataSchema>;

/** Reads `data.idem` from an unknown error-data object; `null` when it is absent or malformed. */
export function readIdemErrorData(data: unknown): IdemErrorData | null {
  if (typeof data !== 'object' || data === null || !('idem' in data)) return null;
  const parsed = idemErrorDataSchema.safeParse((data as { idem: unknown }).idem);
  return parsed.success ? parsed.data : null;
}
