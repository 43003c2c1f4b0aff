import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import {
  ATTEMPT_HEADER,
  IDEMPOTENCY_KEY_HEADER,
  REQUEST_ID_HEADER,
  TIMEOUT_HEADER,
  type RecoveryRecord,
} from '@idem/contract';

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
  /** `Date.now()` when the request reached `createContext`; anchors {@link timeoutMs}. */
  readonly receivedAt: number;
  /**
   * What idem asks of the response: headers, and a status for 202 answers.
   * {@link idemResponseMeta} applies them.
   */
  readonly response: { headers: Map<string, string>; status?: number };
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

/** Request headers as either tRPC adapter hands them out. */
export type IdemHeaderSource = Headers | IncomingMessage | IncomingHttpHeaders;

/**
 * Reads idem's request headers for your `createContext`.
 *
 * @example
 * // fetch adapter
 * createContext: ({ req }) => ({ ...idemContext(req.headers), user: await auth(req) })
 * // standalone / node http adapter: pass the request itself, so repeated headers stay apart
 * createContext: ({ req }) => ({ ...idemContext(req), user: await auth(req) })
 */
export function idemContext(source: IdemHeaderSource): IdemContext {
  const read = headerReader(source);
  const attempt = toInteger(read(ATTEMPT_HEADER)[0]);
  const timeout = toInteger(read(TIMEOUT_HEADER)[0]);
  return {
    idemRequest: {
      keyValues: read(IDEMPOTENCY_KEY_HEADER),
      requestId: read(REQUEST_ID_HEADER)[0] ?? null,
      attempt: attempt !== null && attempt >= 1 ? attempt : null,
      timeoutMs: timeout !== null && timeout >= 0 ? timeout : null,
      receivedAt: Date.now(),
      response: { headers: new Map() },
    },
  };
}

function headerReader(source: IdemHeaderSource): (name: string) => string[] {
  if (typeof Headers !== 'undefined' && source instanceof Headers) {
    // Fetch joins repeated headers with ", ". A valid key never contains a space, so a joined
    // value splits back into the separate headers; a lone key with ", " is invalid either way.
    return (name) => {
      const value = source.get(name);
      return value === null ? [] : value.split(', ');
    };
  }
  if ('headersDistinct' in source && typeof source.headersDistinct === 'object') {
    const distinct = source.headersDistinct as Record<string, string[] | undefined>;
    return (name) => distinct[name.toLowerCase()] ?? [];
  }
  const headers = (
    'headers' in source && typeof source.headers === 'object' ? source.headers : source
  ) as IncomingHttpHeaders;
  return (name) => {
    const value = headers[name.toLowerCase()];
    if (value === undefined) return [];
    return Array.isArray(value) ? value : value.split(', ');
  };
}

function toInteger(value: string | undefined): number | null {
  if (value === undefined || !/^\d{1,15}$/.test(value)) return null;
  return Number(value);
}
