import type { IdemReason } from '@idem/contract';

/** Fields every server event carries. Never a key, a request body or a response body. */
export interface IdemEventBase {
  procedure: string;
  scope: string;
  /** The key's hash; empty for an `unprotected` call (it had no key). */
  keyHash: string;
  /** The record's operation id, when a record exists; an `unprotected` call's own id. */
  operationId: string | null;
  /** The client's per-attempt request id, if sent. */
  requestId: string | null;
}

/**
 * What happened to one request on an idempotent procedure.
 *
 * - `executed`: this request ran the procedure; `outcome` says what was stored (`discarded`: the
 *   lease was lost and another worker owns the key; `unsettled`: an external call's outcome is
 *   unknown and awaits a lookup or an operator; `rolled-back`: the key was taken at commit and this
 *   run's transaction rolled back because another request held the key: a concurrent request's
 *   record committed first (the request answers with that outcome when it is a stored one) or
 *   its uncommitted row outlasted `lockTimeoutMs` (409 in progress).
 * - `replayed`: a stored outcome was replayed; the procedure did not run.
 * - `rejected`: idem refused the request (`reason`: bad key, reused key, in progress, ...).
 * - `store-error`: the key store failed; the request was answered 503 and nothing was stored.
 * - `unprotected`: a call without a key to a procedure with `keys: 'optional'`; it runs as without
 *   idem, nothing claimed or stored (`keyHash` is empty, `operationId` is the call's own).
 *   Emitted before the handler runs.
 */
export type IdemServerEvent =
  | (IdemEventBase & {
      type: 'executed';
      outcome: 'completed' | 'failed' | 'released' | 'discarded' | 'unsettled' | 'rolled-back';
      takeover: boolean;
      durationMs: number;
    })
  | (IdemEventBase & { type: 'replayed'; status: number })
  | (IdemEventBase & { type: 'rejected'; reason: IdemReason })
  | (IdemEventBase & { type: 'store-error'; error: unknown })
  | (IdemEventBase & { type: 'unprotected' });
