/**
 * What an idempotent procedure finds in `ctx.idem` while it runs (request-scoped).
 */
export interface IdemExecution {
  /** Stable id of this logical operation: hand it to downstream systems so they de-duplicate. */
  readonly operationId: string;
  /**
   * False when the call came without a key to a procedure with `keys: 'optional'`: nothing is
   * claimed or stored, a retry runs the handler again, `operationId` is new on every call, and
   * `keyHash` is empty. True on every call that carries a key.
   */
  readonly protected: boolean;
  /** SHA-256 (hex) of the idempotency key. Log this, never the key. Empty when not `protected`. */
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

/** What a lookup by operation id found at the remote system. */
export type LookupResult<T> = { found: true; result: T } | { found: false };

/** What a call or lookup of an external step receives besides the operation id. */
export interface ExternalCallOptions {
  /**
   * Fires when the step's time limit (`timeoutMs`) is reached, before the lease it runs under
   * lapses. Pass it to `fetch` (or your client's equivalent): once it fired, idem no longer waits
   * for the call, and a call still in flight after `timeoutMs` more could race a new owner.
   */
  signal: AbortSignal;
}

/** An external call and how to ask the remote system whether it already happened. */
export interface ExternalStep<T> {
  /**
   * Makes the call. Pass `operationId` downstream as its idempotency key, and `signal` to the
   * request. Runs only right after a fenced write confirmed this worker still owns the record and
   * extended its lease to cover `timeoutMs` (plus one lease for recording the result).
   */
  call(operationId: string, options: ExternalCallOptions): Promise<T>;
  /**
   * Asks the remote system, by `operationId`, whether an earlier call was received. Without it, a
   * call whose outcome is unknown goes to manual reconciliation and is never retried by chance.
   * It runs only once no earlier call can still be in flight, so "not found" means "not
   * received". Its signal fires after the procedure's `leaseMs` (the lease it runs under).
   */
  lookup?(operationId: string, options: ExternalCallOptions): Promise<LookupResult<NoInfer<T>>>;
  /**
   * The time limit of one call, in milliseconds: `signal` fires then, and a call that has not
   * answered counts as an unknown outcome. The record cannot be taken over
   * until the lease plus this limit has passed after the call began. Defaults to half the
   * procedure's `leaseMs` (15 000 ms with the default 30 s lease).
   */
  timeoutMs?: number;
}

/**
 * `ctx.idem` helpers of an external-mode procedure. The handler runs from the top on every
 * attempt; steps already committed return their recorded result instead of running again.
 */
export interface PhaseTools<TTx> {
  /**
   * Runs a local phase: `fn`'s writes through `tx` and the recovery point commit together. A
   * phase committed by an earlier attempt is not run again; its recorded result is returned.
   */
  phase<T>(name: string, fn: (tx: TTx) => Promise<T>): Promise<T>;
  /**
   * Runs an external call once: records the intent first (a fenced write that also extends the
   * lease over the call's time limit), then calls, then records the result. If an earlier attempt
   * recorded the intent but not the result, the outcome is unknown: the remote is asked first
   * (`lookup`), and only a confirmed "not received" calls again, after another fenced intent.
   */
  external<T>(name: string, step: ExternalStep<T>): Promise<T>;
  /** Extends the lease by the procedure's `leaseMs` (for long phases). */
  heartbeat(): Promise<void>;
  /** The last committed step when this attempt started, or null. */
  readonly recoveryPoint: string | null;
}
