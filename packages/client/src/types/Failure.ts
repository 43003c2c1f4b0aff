import type { IdemReason } from '@idem/contract';

/**
 * The closed set of ways an attempt can fail, as the retry loop, its hooks and its budget see them.
 *
 * | kind | what happened | retried? |
 * |---|---|---|
 * | `http-429` | rate limited; `Retry-After` honoured | yes |
 * | `http-500` | internal server error | only with `retryOn500` |
 * | `http-502`, `http-503`, `http-504` | gateway, unavailable (also idem's store), gateway timeout | yes |
 * | `in-progress` | 409 `IDEMPOTENCY_REQUEST_IN_PROGRESS`: the first request still runs | yes, after `Retry-After` |
 * | `timeout` | the per-attempt timeout fired and aborted the attempt | yes |
 * | `connection-refused` | no connection was made (refused, DNS, connect timeout): nothing was sent | yes, even for a mutation without a key |
 * | `connection-lost` | the connection failed after it was made (reset, closed mid-response) | yes |
 * | `key-reused` | 422 `IDEMPOTENCY_KEY_REUSED`: same key, different input | never |
 * | `key-rejected` | 400 `IDEMPOTENCY_KEY_MISSING` / `IDEMPOTENCY_KEY_INVALID` | never |
 * | `idem-refused` | another non-retryable idem reason (outcome unknown, replay unavailable, NUL in the input, a keyed mutation in a batch, ...) | never |
 * | `auth` | 401 or 403 | never |
 * | `client-error` | any other 4xx | never |
 * | `server-error` | any other 5xx | never |
 * | `bad-response` | a response that could not be read as tRPC, status unknown | never |
 * | `unknown` | anything else | never |
 */
export type FailureKind =
  | 'http-429'
  | 'http-500'
  | 'http-502'
  | 'http-503'
  | 'http-504'
  | 'in-progress'
  | 'timeout'
  | 'connection-refused'
  | 'connection-lost'
  | 'key-reused'
  | 'key-rejected'
  | 'idem-refused'
  | 'auth'
  | 'client-error'
  | 'server-error'
  | 'bad-response'
  | 'unknown';

/** One classified attempt failure. */
export interface Failure {
  kind: FailureKind;
  /** HTTP status, when a response arrived. */
  status?: number;
  /** idem's reason from the error's `data.idem`, when idem raised it. */
  reason?: IdemReason;
  /** Milliseconds the server asked to wait (`data.idem.retryAfterMs`, else `Retry-After`). */
  retryAfterMs?: number;
  /**
   * `false` only when the request certainly never left the client (no connection was made), the
   * one case in which a mutation without a key may be sent again.
   */
  mayHaveReachedServer: boolean;
}
