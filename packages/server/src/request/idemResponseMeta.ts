import { RETRY_AFTER_HEADER } from '@idem/contract';
import { unavailableRetryAfterOf } from '../errors/idemErrorFormatter.js';
import type { IdemContext } from '../types/IdemRequest.js';

/**
 * A tRPC `responseMeta` that sets the headers idem asked for (`Idempotent-Replayed`,
 * `Retry-After`, and the `Location` of accepted work) and the 202 status of accepted long-running
 * work. Needed when `createContext` passes `idemContext` the request alone (fastify, lambda), and
 * for the 202 of `respond: 'accepted'` on the fetch adapter; harmless otherwise (nothing is sent
 * twice). It also sets the `Retry-After` of a 503 `idemErrorFormatter` answered for an unreachable
 * database when there is no context to carry it (`createContext` itself failed). Pass it to your
 * adapter, or call it from your own `responseMeta` with the options tRPC gave you and merge.
 *
 * @example
 * createHTTPServer({ router, createContext, responseMeta: idemResponseMeta })
 */
export function idemResponseMeta(opts: { ctx?: unknown; errors?: readonly unknown[] }): {
  headers?: Headers;
  status?: number;
} {
  const request = (opts.ctx as Partial<IdemContext> | undefined)?.idemRequest;
  if (!request) return unavailableMeta(opts.errors);
  const { headers, status, written } = request.response;
  // Written out rather than spread from conditional literals: once per request, fresh or replayed.
  const meta: { headers?: Headers; status?: number } = {};
  if (headers.size > 0 && !written?.headers) meta.headers = new Headers([...headers]);
  if (status !== undefined) meta.status = status;
  return meta;
}

/** Without a context: the `Retry-After` of an unreachable database's 503, if one was answered. */
function unavailableMeta(errors: readonly unknown[] | undefined): { headers?: Headers } {
  for (const error of errors ?? []) {
    const retryAfter = unavailableRetryAfterOf(error);
    if (retryAfter !== undefined)
      return { headers: new Headers([[RETRY_AFTER_HEADER, retryAfter]]) };
  }
  return {};
}
