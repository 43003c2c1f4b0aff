import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import {
  ATTEMPT_HEADER,
  IDEMPOTENCY_KEY_HEADER,
  REQUEST_ID_HEADER,
  TIMEOUT_HEADER,
  type IdemMeta,
  type RecoveryRecord,
} from '@idem/contract';
import { idemTRPCError } from './IdemRequestError.js';

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

/** The part of tRPC's `createContext` `info` idem reads (`TRPCRequestInfo`). */
export interface IdemRequestInfo {
  isBatchCall: boolean;
  calls: readonly { path: string; procedure?: unknown }[];
}

/**
 * Reads idem's request headers for your `createContext`. Pass tRPC's `info` too: a batch
 * (`?batch=1`) that calls an idempotent mutation is then refused whole, before any of its items
 * runs (this function throws 400 `IDEMPOTENCY_BATCH_REFUSED`). Without `info`, idem still refuses
 * the idempotent items of a batch it recognises (from a node request's URL), but the other items
 * run.
 *
 * @example
 * // fetch adapter
 * createContext: ({ req, info }) => ({ ...idemContext(req.headers, info), user: await auth(req) })
 * // standalone / node http adapter: pass the request itself, so repeated headers stay apart
 * createContext: ({ req, info }) => ({ ...idemContext(req, info), user: await auth(req) })
 */
export function idemContext(source: IdemHeaderSource, info?: IdemRequestInfo): IdemContext {
  const batch = info ? info.isBatchCall : isBatchUrl(source);
  if (info?.isBatchCall) {
    const keyed = info.calls.filter((call) => isIdempotentMutation(call.procedure));
    if (keyed.length > 0) {
      throw idemTRPCError(
        'IDEMPOTENCY_BATCH_REFUSED',
        `${keyed.map((call) => call.path).join(', ')}: idempotent mutations are sent alone, not in a batch (?batch=1); nothing in this batch ran`,
      );
    }
  }
  const read = headerReader(source);
  const attempt = toInteger(read(ATTEMPT_HEADER)[0]);
  const timeout = toInteger(read(TIMEOUT_HEADER)[0]);
  return {
    idemRequest: {
      keyValues: read(IDEMPOTENCY_KEY_HEADER),
      requestId: read(REQUEST_ID_HEADER)[0] ?? null,
      attempt: attempt !== null && attempt >= 1 ? attempt : null,
      timeoutMs: timeout !== null && timeout >= 0 ? timeout : null,
      batch,
      receivedAt: Date.now(),
      response: { headers: new Map() },
    },
  };
}

/** A procedure of the router whose meta declares idempotency (tRPC's `_def`, read-only). */
function isIdempotentMutation(procedure: unknown): boolean {
  const def = (procedure as { _def?: { type?: unknown; meta?: IdemMeta } } | null | undefined)
    ?._def;
  return def?.type === 'mutation' && def.meta?.idempotency !== undefined;
}

/** For a node request: does its URL ask for a batch? Unknown (false) for bare headers. */
function isBatchUrl(source: IdemHeaderSource): boolean {
  const url = (source as { url?: unknown }).url;
  if (typeof url !== 'string') return false;
  const query = url.indexOf('?');
  return query >= 0 && new URLSearchParams(url.slice(query + 1)).get('batch') === '1';
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
