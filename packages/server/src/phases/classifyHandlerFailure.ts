import { getHTTPStatusCodeFromError } from '@trpc/server/http';
import type { TRPCError } from '@trpc/server';
import type { FailurePolicy } from '@idem/contract';

/** 4xx statuses that describe a moment, not the request: retrying may succeed. */
const TRANSIENT_CLIENT_STATUSES = new Set([408, 409, 425, 429, 499]);

/**
 * Whether a handler's failure is stored and replayed (`deterministic`) or releases the key so the
 * next retry runs the procedure again (`transient`).
 *
 * Deterministic: a 4xx other than 408, 409, 425, 429 and 499, under the `deterministic` policy.
 * Everything else, 5xx and unknown errors included, is transient: a 503 is never replayed for a
 * whole replay window.
 */
export function classifyHandlerFailure(
  error: TRPCError,
  policy: FailurePolicy,
): { kind: 'deterministic' | 'transient'; status: number } {
  const status = getHTTPStatusCodeFromError(error);
  const deterministic =
    policy === 'deterministic' &&
    status >= 400 &&
    status < 500 &&
    !TRANSIENT_CLIENT_STATUSES.has(status);
  return { kind: deterministic ? 'deterministic' : 'transient', status };
}
