import type { IdemContext } from './idemContext.js';

/**
 * A tRPC `responseMeta` that sets the headers idem asked for (`Idempotent-Replayed`,
 * `Retry-After`) and the 202 status of accepted long-running work. Needed when `createContext`
 * passes `idemContext` the request alone (fastify, lambda), and for the 202 of
 * `respond: 'accepted'` on the fetch adapter; harmless otherwise (nothing is sent twice). Pass it
 * to your adapter, or call it from your own `responseMeta` and merge.
 *
 * @example
 * createHTTPServer({ router, createContext, responseMeta: idemResponseMeta })
 */
export function idemResponseMeta(opts: { ctx?: unknown }): { headers?: Headers; status?: number } {
  const request = (opts.ctx as Partial<IdemContext> | undefined)?.idemRequest;
  if (!request) return {};
  const { headers, status, written } = request.response;
  // Written out rather than spread from conditional literals: once per request, fresh or replayed.
  const meta: { headers?: Headers; status?: number } = {};
  if (headers.size > 0 && !written?.headers) meta.headers = new Headers([...headers]);
  if (status !== undefined) meta.status = status;
  return meta;
}
