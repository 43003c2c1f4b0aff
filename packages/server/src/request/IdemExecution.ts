import type { PhaseTools } from '../phases/PhasedExecution.js';

/**
 * What an idempotent procedure finds in `ctx.idem` while it runs (request-scoped).
 */
export interface IdemExecution {
  /** Stable id of this logical operation: hand it to downstream systems so they de-duplicate. */
  readonly operationId: string;
  /** SHA-256 (hex) of the idempotency key. Log this, never the key. */
  readonly keyHash: string;
  /** The scope the key was claimed in (caller scope plus the procedure's suffix). */
  readonly scope: string;
  /** The procedure path. */
  readonly procedure: string;
  /** How many times this key has been claimed: 1 on a first execution, more after a takeover. */
  readonly executions: number;
  /** The client's per-attempt request id, if it sent one. */
  readonly requestId: string | null;
  /** The client's attempt number, if it sent one. */
  readonly clientAttempt: number | null;
  /**
   * Milliseconds left of the caller's overall deadline, now; null when the caller sent none. Skip
   * work that cannot finish in time.
   */
  remainingMs(): number | null;
}

/** `ctx.idem` of a local-mode procedure: its writes go through `tx` and commit with the claim. */
export interface LocalIdemExecution<TTx> extends IdemExecution {
  /** The transaction that holds the claim. Use it for every write; never the outer database. */
  readonly tx: TTx;
}

/**
 * `ctx.idem` of an external-mode procedure: no transaction around the handler; steps
 * (`phase`, `external`) commit their recovery points as they finish.
 */
export type ExternalIdemExecution<TTx> = IdemExecution & PhaseTools<TTx>;
