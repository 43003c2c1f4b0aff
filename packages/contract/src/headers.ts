/**
 * HTTP header names of the idem wire contract. Header names are case-insensitive on the wire;
 * these are the spellings idem sends.
 */

/** Carries the idempotency key of one logical mutation. Exactly one per request. */
export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';

/** Set to `true` on a response that replays a stored outcome instead of running the procedure. */
export const IDEMPOTENT_REPLAYED_HEADER = 'Idempotent-Replayed';

/** Seconds to wait before retrying (409 in progress, 429, 503). Standard HTTP header. */
export const RETRY_AFTER_HEADER = 'Retry-After';

/** Per-attempt request id: new on every attempt, unlike the key. For logs only. */
export const REQUEST_ID_HEADER = 'X-Request-Id';

/** The attempt number of this request within its logical call, counting from 1. */
export const ATTEMPT_HEADER = 'Idempotency-Attempt';

/** Milliseconds left of the caller's overall deadline when this attempt was sent. */
export const TIMEOUT_HEADER = 'Idempotency-Timeout-Ms';

/**
 * Set to `false` on the response of a call a procedure with `keys: 'optional'` ran without a key:
 * the procedure ran as a plain mutation, with nothing claimed or stored, so a retry would run it
 * again. Absent on every other response.
 */
export const IDEMPOTENCY_PROTECTED_HEADER = 'Idempotency-Protected';
