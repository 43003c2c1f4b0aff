import type { IdemContext } from './idemContext.js';

/**
 * A tRPC `responseMeta` that sets the headers idem asked for (`Idempotent-Replayed`,
 * `Retry-After`). Pass it to your adapter, or call it from your own `responseMeta` and merge.
 *
 * @example
 * createHTTPServer({ router, createContext, responseMeta: idemResponseMeta })
 */
export function idemResponseMeta(opts: { ctx?: unknown }): { headers?: Headers } {
  const request = (opts.ctx as Partial<IdemContext> | undefined)?.idemRequest;
  if (!request || request.responseHeaders.size === 0) return {};
  return { headers: new Headers([...request.responseHeaders]) };
}
