import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
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
  status?: number;
  /**
   * Which of them already went straight to the response (set by {@link idemContext} when it got
   * the adapter's options), so {@link idemResponseMeta} does not send them twice.
   */
  readonly written?: { headers: boolean; status: boolean };
}

/** Request headers as either tRPC adapter hands them out. */
export type IdemHeaderSource = Headers | IncomingMessage | IncomingHttpHeaders;

/**
 * The options tRPC passes to `createContext`: `{ req, res }` from the standalone, node-http and
 * express adapters, `{ req, resHeaders }` from the fetch adapter. Given these, idem writes its
 * response headers itself.
 */
export type IdemAdapterOptions =
  { req: IncomingMessage; res: ServerResponse } | { req: Request; resHeaders: Headers };

/** What {@link idemContext} reads: the adapter's `createContext` options (best), or the request. */
export type IdemContextSource = IdemAdapterOptions | IdemHeaderSource;

/**
 * Reads idem's request headers for your `createContext`. Pass the adapter's options as they come:
 * idem then sets `Idempotent-Replayed` and `Retry-After` on the response itself (and the 202 of
 * accepted work, on node), with no `responseMeta` needed.
 *
 * @example
 * // standalone / node-http / express adapters, and the fetch adapter alike
 * createContext: (opts) => ({ ...idemContext(opts), user: await auth(opts.req) })
 *
 * Other adapters (fastify, lambda): pass the request or its headers, and add
 * `responseMeta: idemResponseMeta`, which then carries idem's headers.
 */
export function idemContext(source: IdemContextSource): IdemContext {
  const adapter = adapterOptions(source);
  const read = headerReader(
    adapter
      ? adapter.req.headers instanceof Headers
        ? adapter.req.headers
        : (adapter.req as IncomingMessage)
      : (source as IdemHeaderSource),
  );
  const attempt = toInteger(read(ATTEMPT_HEADER)[0]);
  const timeout = toInteger(read(TIMEOUT_HEADER)[0]);
  return {
    idemRequest: {
      keyValues: read(IDEMPOTENCY_KEY_HEADER),
      requestId: read(REQUEST_ID_HEADER)[0] ?? null,
      attempt: attempt !== null && attempt >= 1 ? attempt : null,
      timeoutMs: timeout !== null && timeout >= 0 ? timeout : null,
      receivedAt: Date.now(),
      response: adapter ? writeThrough(adapter) : { headers: new Map() },
    },
  };
}

function adapterOptions(source: IdemContextSource): IdemAdapterOptions | null {
  if (typeof Headers !== 'undefined' && source instanceof Headers) return null;
  const candidate = source as Partial<Record<'req' | 'res' | 'resHeaders', unknown>>;
  if (typeof candidate.req !== 'object' || candidate.req === null) return null;
  if (typeof Headers !== 'undefined' && candidate.resHeaders instanceof Headers) {
    return source as IdemAdapterOptions;
  }
  const res = candidate.res as Partial<ServerResponse> | undefined;
  return typeof res?.setHeader === 'function' ? (source as IdemAdapterOptions) : null;
}

/**
 * A response whose headers (and, on node, status) go straight to the adapter's response. Node:
 * tRPC keeps a status a procedure set (it only replaces 200). Fetch: `resHeaders` are merged into
 * the response; its status needs `responseMeta`.
 */
function writeThrough(adapter: IdemAdapterOptions): IdemResponse {
  const node = 'res' in adapter ? adapter.res : null;
  const fetchHeaders = 'resHeaders' in adapter ? adapter.resHeaders : null;
  class WriteThroughHeaders extends Map<string, string> {
    override set(name: string, value: string): this {
      if (node && !node.headersSent) node.setHeader(name, value);
      fetchHeaders?.set(name, value);
      return super.set(name, value);
    }
  }
  let status: number | undefined;
  return {
    headers: new WriteThroughHeaders(),
    get status() {
      return status;
    },
    set status(value) {
      status = value;
      if (node && value !== undefined && !node.headersSent) node.statusCode = value;
    },
    written: { headers: true, status: node !== null },
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
