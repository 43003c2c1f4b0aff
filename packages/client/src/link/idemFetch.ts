import type { HTTPLinkOptions } from '@trpc/client';
import type { AnyTRPCClientTypes } from '@trpc/server';
import { RETRY_AFTER_HEADER } from '@idem/contract';
import { IdemClientError } from '../errors/IdemClientError.js';
import { parseRetryAfter } from '../retry/parseRetryAfter.js';

/** The `fetch` tRPC's HTTP links accept. */
export type IdemFetch = NonNullable<HTTPLinkOptions<AnyTRPCClientTypes>['fetch']>;

/**
 * Wraps `fetch` so that a response tRPC cannot read keeps its HTTP status.
 *
 * tRPC's HTTP links parse every body as JSON; a proxy's HTML 502/503/504 page then fails as a
 * `SyntaxError` and the status is lost, so a retry loop cannot tell a gateway error from a bug.
 * With this wrapper, such a response rejects with an {@link IdemClientError} `HTTP_ERROR` that
 * carries `status` and `Retry-After`, and the link classifies it by status. Responses that are
 * tRPC JSON (success or error) pass through untouched; a 2xx response typed
 * `application/json` is not even wrapped (a 2xx body that says it is JSON and is not fails as
 * tRPC's `SyntaxError`, never retried either way).
 *
 * idem uses it for the requests it sends itself. Give it to your own terminating link too
 * (`httpBatchLink({ url, fetch: idemFetch() })`) so queries are classified the same way.
 */
export function idemFetch(fetchImpl?: IdemFetch): IdemFetch {
  return async (input, init) => {
    const doFetch = fetchImpl ?? (globalThis.fetch as unknown as IdemFetch);
    const response = await doFetch(input, init);
    const { text, status } = response as { text?: unknown; status?: unknown };
    if (typeof text !== 'function' || typeof status !== 'number') return response;
    // tRPC's own answer (2xx, JSON) is left untouched: no wrapper per response on the path every
    // successful call takes. A 2xx page that is not JSON (a captive portal's) is still wrapped.
    if (status < 300 && isJsonType(headerOf(response, 'content-type'))) return response;
    const readText = text.bind(response) as () => Promise<string>;
    Object.defineProperty(response, 'json', {
      configurable: true,
      value: async (): Promise<unknown> => {
        const body = await readText();
        let parsed: unknown;
        try {
          parsed = JSON.parse(body);
        } catch (cause) {
          throw httpError(response, status, body, cause);
        }
        if (status >= 400 && !isTrpcEnvelope(parsed)) throw httpError(response, status, body);
        return parsed;
      },
    });
    return response;
  };
}

function httpError(
  response: object,
  status: number,
  body: string,
  cause?: unknown,
): IdemClientError {
  const retryAfterMs = parseRetryAfter(headerOf(response, RETRY_AFTER_HEADER), Date.now());
  const snippet = body.replace(/\s+/g, ' ').trim().slice(0, 120);
  return new IdemClientError('HTTP_ERROR', `HTTP ${status} with a non-tRPC body: ${snippet}`, {
    status,
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    cause,
  });
}

/** A response header, if the response has `headers.get` (tRPC's type does not promise it). */
function headerOf(response: object, name: string): string | null | undefined {
  return (response as { headers?: { get?: (name: string) => string | null } }).headers?.get?.(name);
}

/** `application/json`, with or without parameters (`; charset=utf-8`), in any case. */
const JSON_TYPE = /^application\/json\s*(?:;|$)/i;

function isJsonType(contentType: string | null | undefined): boolean {
  return typeof contentType === 'string' && JSON_TYPE.test(contentType);
}

/** A tRPC response body: `{ result }` or `{ error }`, or a batch (array) of them. */
function isTrpcEnvelope(value: unknown): boolean {
  const one = (item: unknown) =>
    typeof item === 'object' && item !== null && ('result' in item || 'error' in item);
  return Array.isArray(value) ? value.every(one) : one(value);
}
