import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  ATTEMPT_HEADER,
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_PROTECTED_HEADER,
  IDEMPOTENT_REPLAYED_HEADER,
  REQUEST_ID_HEADER,
  RETRY_AFTER_HEADER,
  TIMEOUT_HEADER,
} from '@idem/contract';

/**
 * The request headers idem's client sends, which a page on another origin may send only when the
 * preflight allows them (none is CORS-safelisted), and `Content-Type`, which tRPC sends as
 * `application/json` (not safelisted either).
 */
export const IDEM_CORS_ALLOW_HEADERS = [
  'Content-Type',
  IDEMPOTENCY_KEY_HEADER,
  ATTEMPT_HEADER,
  TIMEOUT_HEADER,
  REQUEST_ID_HEADER,
] as const;

/**
 * The response headers idem's client reads, which a page on another origin can read only when
 * they are exposed: without them a replay looks like a first execution, a 503's wait is lost,
 * a 202 of accepted work does not say where to poll (`Location`), and a call a procedure with
 * `keys: 'optional'` ran without a key does not say so (`Idempotency-Protected`).
 */
export const IDEM_CORS_EXPOSE_HEADERS = [
  IDEMPOTENT_REPLAYED_HEADER,
  RETRY_AFTER_HEADER,
  'Location',
  IDEMPOTENCY_PROTECTED_HEADER,
] as const;

/** Options of {@link idemCors}. Every option but `origins` has a default. */
export interface IdemCorsOptions {
  /**
   * The origins allowed to call, exactly as browsers send them (`https://shop.example.com`,
   * `http://127.0.0.1:5173`: scheme, host and port, no path), or a function deciding per origin.
   * `['*']` allows every origin (never with `credentials`). Required: there is no safe default.
   */
  origins: readonly string[] | ((origin: string) => boolean);
  /**
   * Your own request headers a page may send, besides {@link IDEM_CORS_ALLOW_HEADERS}: e.g.
   * `['Authorization']` for bearer tokens. Defaults to none.
   */
  allowHeaders?: readonly string[];
  /** Your own response headers a page may read, besides idem's. Defaults to none. */
  exposeHeaders?: readonly string[];
  /**
   * Allow cookies and HTTP authentication (`Access-Control-Allow-Credentials: true`). Defaults to
   * `false`: bearer tokens in a header need no credentials mode.
   */
  credentials?: boolean;
  /**
   * Seconds a browser may cache a preflight answer. Defaults to 600 (Chromium caps it at 7 200,
   * Firefox at 86 400).
   */
  maxAgeSeconds?: number;
}

/** CORS for idem's clients on other origins, for the standalone and the fetch adapters. */
export interface IdemCors {
  /**
   * The CORS headers of a response to a request from `origin` (the `Origin` header): empty when
   * the origin is missing or not allowed, except `Vary: Origin`, which every answer carries.
   */
  headersFor(origin: string | null | undefined, preflight: boolean): Record<string, string>;
  /**
   * A connect-style middleware, for the standalone adapter's `middleware` option (and express):
   * answers preflights (`OPTIONS` with `Access-Control-Request-Method`) with 204, and adds the
   * headers to every other response before calling `next`.
   */
  middleware(req: IncomingMessage, res: ServerResponse, next: () => void): void;
  /**
   * Wraps a fetch handler (a function from `Request` to `Response`, as one calling tRPC's
   * `fetchRequestHandler`): answers preflights with 204, and adds the headers to its responses.
   */
  fetch<TArgs extends unknown[]>(
    handler: (request: Request, ...rest: TArgs) => Response | Promise<Response>,
  ): (request: Request, ...rest: TArgs) => Promise<Response>;
}

/**
 * CORS done for idem: a page on another origin may send `Idempotency-Key` and the client's other
 * request headers, and may read `Idempotent-Replayed` and `Retry-After`. Configured once per app.
 * Throws at start-up on an origin written with a path or a trailing slash (browsers never send
 * one, so it would never match), and on `'*'` with `credentials`.
 *
 * @example
 * const cors = idemCors({ origins: ['https://shop.example.com'], allowHeaders: ['Authorization'] });
 * createHTTPServer({ router, createContext, middleware: cors.middleware });
 * // fetch adapter
 * export default { fetch: cors.fetch((req) => fetchRequestHandler({ endpoint: '/trpc', req, router, createContext })) };
 */
export function idemCors(options: IdemCorsOptions): IdemCors {
  const allowed = originTest(options);
  const credentials = options.credentials ?? false;
  const maxAge = options.maxAgeSeconds ?? 600;
  if (!Number.isInteger(maxAge) || maxAge < 0) {
    throw new TypeError(`idemCors: maxAgeSeconds must be a whole number >= 0; got ${maxAge}`);
  }
  const allowHeaders = unique([...IDEM_CORS_ALLOW_HEADERS, ...(options.allowHeaders ?? [])]);
  const exposeHeaders = unique([...IDEM_CORS_EXPOSE_HEADERS, ...(options.exposeHeaders ?? [])]);

  const headersFor = (origin: string | null | undefined, preflight: boolean) => {
    const headers: Record<string, string> = { Vary: 'Origin' };
    if (!origin || !allowed(origin)) return headers;
    headers['Access-Control-Allow-Origin'] = origin;
    if (credentials) headers['Access-Control-Allow-Credentials'] = 'true';
    if (preflight) {
      headers['Access-Control-Allow-Methods'] = 'GET, POST, OPTIONS';
      headers['Access-Control-Allow-Headers'] = allowHeaders;
      headers['Access-Control-Max-Age'] = String(maxAge);
    } else {
      headers['Access-Control-Expose-Headers'] = exposeHeaders;
    }
    return headers;
  };

  return {
    headersFor,
    middleware(req, res, next) {
      const origin = req.headers.origin;
      const preflight =
        req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined;
      const headers = headersFor(origin, preflight);
      if (preflight) {
        res.writeHead(204, { ...headers, 'Content-Length': '0' });
        res.end();
        return;
      }
      for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
      keepVaryOrigin(res);
      next();
    },
    fetch(handler) {
      return async (request, ...rest) => {
        const origin = request.headers.get('origin');
        if (request.method === 'OPTIONS' && request.headers.has('access-control-request-method')) {
          return new Response(null, { status: 204, headers: headersFor(origin, true) });
        }
        const response = await handler(request, ...rest);
        const headers = new Headers(response.headers);
        for (const [name, value] of Object.entries(headersFor(origin, false))) {
          if (name === 'Vary') headers.append(name, value);
          else headers.set(name, value);
        }
        return new Response(response.body, {
          status: response.status,
          statusText: response.statusText,
          headers,
        });
      };
    },
  };
}

function originTest(options: IdemCorsOptions): (origin: string) => boolean {
  const { origins } = options;
  if (typeof origins === 'function') return origins;
  if (origins.includes('*')) {
    if (origins.length > 1 || options.credentials) {
      throw new TypeError(
        "idemCors: '*' allows every origin; list it alone, and never with credentials (browsers refuse that answer)",
      );
    }
    return () => true;
  }
  for (const origin of origins) {
    let parsed: URL | undefined;
    try {
      parsed = new URL(origin);
    } catch {
      // Reported below.
    }
    if (!parsed || parsed.origin !== origin) {
      throw new TypeError(
        `idemCors: an origin is scheme://host[:port] as browsers send it, without a path or trailing slash; got ${JSON.stringify(origin)}${parsed && parsed.origin !== 'null' ? ` (did you mean ${parsed.origin}?)` : ''}`,
      );
    }
  }
  const set = new Set(origins);
  return (origin) => set.has(origin);
}

/** tRPC sets its own `Vary` later: keep `Origin` in it, so no cache serves one origin's answer to another. */
function keepVaryOrigin(res: ServerResponse): void {
  const setHeader = res.setHeader.bind(res);
  res.setHeader = ((name: string, value: number | string | readonly string[]) => {
    if (name.toLowerCase() !== 'vary') return setHeader(name, value);
    const names = (Array.isArray(value) ? value.join(', ') : String(value)).split(/\s*,\s*/);
    if (!names.some((item) => item.toLowerCase() === 'origin')) names.push('Origin');
    return setHeader(name, names.filter(Boolean).join(', '));
  }) as typeof res.setHeader;
}

function unique(names: readonly string[]): string {
  const seen = new Map<string, string>();
  for (const name of names) seen.set(name.toLowerCase(), name);
  return [...seen.values()].join(', ');
}
