import type { IdemContext } from './idemContext.js';

/**
 * A tRPC `responseMeta` that sets the headers idem asked for (`Idempotent-Replayed`,
 * `Retry-After`) and the 202 status of accepted long-running work. Pass it to your adapter, or call it from your own `responseMeta` and merge.
 *
 * @example
 * createHTTPServer({ router, createContext, responseMeta: idemResponseMeta })
 */
export function idemResponseMeta(opts: { ctx?: unknown }): { headers?: Headers; status?: number } {
  const request = (opts.ctx as Partial<IdemContext> | undefined)?.idemRequest;
  if (!request) return {};
  const { headers, status } = request.response;
  return {
    ...(headers.size > 0 ? { headers: new Headers([...headers]) } : {}),
    ...(status !== undefined ? { status } : {}),
  };
}
