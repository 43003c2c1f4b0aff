import type { RecoveryRecord } from '@idem/contract';

/**
 * What idem reads from one HTTP request, and the response headers it wants set. Built once per
 * request by {@link idemContext} in your `createContext`.
 */
export interface IdemRequest {
  /** Every value of the `Idempotency-Key` header, in order (several headers are refused). */
  readonly keyValues: readonly string[];
  /** The per-attempt `X-Request-Id`, if sent. */
  readonly requestId: string | null;
  /** The `Idempotency-Attempt` number, if sent and well-formed. */
  readonly attempt: number | null;
  /** Milliseconds of the caller's overall deadline left when the attempt was sent, if sent. */
  readonly timeoutMs: number | null;
  /**
   * True when the request is a tRPC batch (`?batch=1`): an idempotent mutation in it is refused
   * with 400 `IDEMPOTENCY_BATCH_REFUSED`. Read from `info` or, for a node request, its URL.
   */
  readonly batch?: boolean;
  /** `Date.now()` when the request reached `createContext`; anchors {@link timeoutMs}. */
  readonly receivedAt: number;
  /**
   * What idem asks of the response: headers, and a status for 202 answers. Written straight to
   * the response when {@link idemContext} got the adapter's options; else
   * {@link idemResponseMeta} applies them.
   */
  readonly response: IdemResponse;
  /**
   * Set only by the completer: the record it took over, to resume without a claim. Never set it
   * from a request.
   */
  readonly resume?: RecoveryRecord;
}

/** The part of your tRPC context idem needs. Spread {@link idemContext}'s result into yours. */
export interface IdemContext {
  idemRequest: IdemRequest;
}

/** The headers and status idem asks of one response. */
export interface IdemResponse {
  headers: Map<string, string>;
  status?: number | undefined;
  /**
   * Which of them already went straight to the response (set by {@link idemContext} when it got
   * the adapter's options), so {@link idemResponseMeta} does not send them twice.
   */
  readonly written?: { headers: boolean; status: boolean };
}
