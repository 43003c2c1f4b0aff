import type {
  Fence,
  IdempotencyRecord,
  IdempotencyStore,
  StoredResponse,
} from './IdempotencyStore.js';

/**
 * The parts of a record that phased (external-mode) work, the background workers and operators
 * read. Every field comes from the record's own row.
 */
export interface RecoveryFields {
  /**
   * The committed steps of the work, as JSON text written by the server (`null` before the first):
   * which phases are done with their results, and which external calls have a recorded intent.
   */
  steps: string | null;
  /** The input the completer needs to resume, as the server stored it (possibly encrypted). */
  inputText: string | null;
  /** When the first irreversible step (an external call) was about to start; null before. */
  irreversibleAt: Date | null;
  /** When the record's results and inputs were erased (user data erasure); null if never. */
  erasedAt: Date | null;
  /** When a newer live row replaced this one after the replay window; null for the live row. */
  supersededAt: Date | null;
  /**
   * Set when an external call was about to start: the instant after which that call can no longer
   * be in flight (the lease it extended, plus the call's time limit). Nobody takes the record
   * over before it. Null when no call is outstanding.
   */
  takeoverAfter: Date | null;
  /** How often abandoned work of this record was taken over (by claims and completers). */
  takeovers: number;
  /** Why the record is in NEEDS_RECONCILIATION; null otherwise. */
  reconcileReason: ReconciliationReason | null;
}

/**
 * Why a record went to NEEDS_RECONCILIATION, as stored in its `reconcile_reason` and shown by
 * `idem-admin stuck`.
 */
export const RECONCILIATION_REASONS = {
  /** An external call's outcome is unknown and the step has no `lookup`. */
  no_lookup: 'an external call timed out and its step has no lookup',
  /** Taken over more than `maxTakeovers` times: the work keeps killing or stalling its worker. */
  takeover_limit: 'taken over more often than maxTakeovers allows',
  /** The record's data was erased after an external call began: a re-run would be blind. */
  erased_after_call: 'erased after an external call began',
  /**
   * The record's step results were erased after a step (a `phase`) committed, and no external
   * call had begun: a re-run would repeat the step's committed writes.
   */
  erased_after_step: 'erased after a step of its work committed',
  /** The completer found no stored input to resume the work with. */
  input_missing: 'no stored input to resume with',
} as const;
export type ReconciliationReason = keyof typeof RECONCILIATION_REASONS;

/** A record as the recovery store hands it out. */
export type RecoveryRecord = IdempotencyRecord & RecoveryFields;

/** Counts of records that need attention, by the database clock. */
export interface StuckReport {
  /** IN_PROGRESS whose lease ran out more than `graceMs` ago: the completer's queue. */
  abandoned: number;
  /** PENDING for longer than `graceMs`. */
  pendingTooLong: number;
  /** OUTCOME_UNKNOWN: an external call's outcome must be looked up. */
  outcomeUnknown: number;
  /** NEEDS_RECONCILIATION: an operator must decide. */
  needsReconciliation: number;
}

/** One operator action on a record, kept in the audit table. */
export interface AuditEntry {
  id: string;
  recordId: string;
  operationId: string;
  actor: string;
  action: string;
  fromState: string;
  toState: string;
  fromVersion: number;
  note: string;
  at: Date;
}

/**
 * What an operator may set a record to, through the versioned state machine. Its windows are the
 * procedure's own, given explicitly (there are no defaults): the store cannot know them, and a
 * window shorter than the procedure's lets a late retry run the work again.
 */
export type Resolution =
  | {
      state: 'COMPLETED' | 'TERMINAL_FAILURE';
      /**
       * The response replayed from now on, with the procedure's `replayWindowMs` and
       * `retentionMs`.
       */
      response: StoredResponse;
      /** Who resolved it (an operator's name or ticket), for the audit row. */
      actor: string;
      /** Why, for the audit row. */
      note: string;
    }
  | {
      /** Releases the key: the next claim takes the record over and resumes from its steps. */
      state: 'RETRYABLE_FAILURE';
      /** A released key stores no response. */
      response?: never;
      /**
       * Milliseconds the released record (with its steps: the recorded intents of external
       * calls) is kept for the next retry: the procedure's `retentionMs`, as `release` takes it.
       */
      retentionMs: number;
      /** Who resolved it (an operator's name or ticket), for the audit row. */
      actor: string;
      /** Why, for the audit row. */
      note: string;
    };

/**
 * The store of phased work, background workers and operator tools. Every write that changes a
 * record is fenced by its version; every comparison uses the database clock.
 */
export interface RecoveryStore<TTx = unknown> extends IdempotencyStore<TTx> {
  /** Reads a record by operation id (live or superseded), or null. */
  findByOperationId(operationId: string, tx?: TTx): Promise<RecoveryRecord | null>;
  /** Reads the live record of a key with its recovery fields, or null. */
  readRecovery(
    key: { scope: string; procedure: string; keyHash: string },
    tx?: TTx,
  ): Promise<RecoveryRecord | null>;
  /**
   * Commits the steps of the owner's work (and the phase's own writes, when given its `tx`),
   * moves the recovery point, and extends the lease by `leaseMs`. `irreversible: true` stamps
   * `irreversibleAt` (first external intent): from then on the work cannot be cancelled.
   * Fenced: false when the owner lost the record (taken over, cancelled, resolved).
   */
  saveSteps(
    fence: Fence,
    update: {
      steps: string;
      recoveryPoint: string | null;
      leaseMs: number;
      irreversible?: boolean;
      /**
       * This write is the intent right before an external call with this time limit: the lease
       * is extended to `callTimeLimitMs + leaseMs` from now, and `takeoverAfter` is set to that
       * lease end plus `callTimeLimitMs`. A false return means: do not call.
       */
      callTimeLimitMs?: number;
      /** This write records an external call's result: clears `takeoverAfter`. */
      callSettled?: boolean;
    },
    tx?: TTx,
  ): Promise<boolean>;
  /** Heartbeat: extends the owner's lease to `leaseMs` from now. Fenced. */
  extendLease(fence: Fence, leaseMs: number): Promise<boolean>;
  /**
   * Moves an owned IN_PROGRESS record to an unsettled state and drops the lease. Fenced. Keeps
   * `takeoverAfter`: a lookup never runs while the call can still be in flight. `reason` is
   * stored for NEEDS_RECONCILIATION.
   */
  markUnsettled(
    fence: Fence,
    state: 'OUTCOME_UNKNOWN' | 'NEEDS_RECONCILIATION',
    reason?: ReconciliationReason,
  ): Promise<boolean>;
  /**
   * Completer: takes over at most `limit` abandoned records of `procedures`: IN_PROGRESS whose
   * lease ran out, and OUTCOME_UNKNOWN, in both cases only once `takeoverAfter` has passed. Each
   * comes back IN_PROGRESS, owned by `owner`, with its version bumped and attempts and takeovers
   * counted; or, when it had already been taken over `maxTakeovers` times (default
   * `DEFAULT_MAX_TAKEOVERS`), NEEDS_RECONCILIATION with reason `takeover_limit`, owned by
   * nobody. Safe on many instances at once: a record goes to one. A completer should take one
   * record at a time (`limit: 1`) and finish it before taking the next, so it never works on a
   * record whose lease it took long ago.
   */
  takeOverAbandoned(options: {
    owner: string;
    leaseMs: number;
    limit: number;
    procedures: readonly string[];
    maxTakeovers?: number;
  }): Promise<RecoveryRecord[]>;
  /**
   * Takes at most `limit` queued (PENDING) records of `procedures`, oldest first: IN_PROGRESS,
   * owned by `owner` with a lease of `leaseMs`, version bumped. `FOR UPDATE SKIP LOCKED`: workers
   * on many instances never take the same record, and a cancelled record is never taken.
   */
  takePending(options: {
    owner: string;
    leaseMs: number;
    limit: number;
    procedures: readonly string[];
  }): Promise<RecoveryRecord[]>;
  /** How many records of `procedures` are queued (PENDING). */
  countPending(procedures: readonly string[]): Promise<number>;
  /**
   * Cancels owned-or-not IN_PROGRESS/PENDING work at `fence` if no irreversible step started:
   * stores `response` as a TERMINAL_FAILURE and bumps the version, so the worker's next fenced
   * write fails and it stops. `irreversible` when an external call may already have happened.
   */
  cancel(fence: Fence, response: StoredResponse): Promise<'cancelled' | 'irreversible' | 'stale'>;
  /**
   * Reaper: deletes at most `limit` records in COMPLETED, TERMINAL_FAILURE or RETRYABLE_FAILURE
   * whose `purgeAfter` has passed, by primary key. Never PENDING, IN_PROGRESS or unsettled ones.
   * Safe on many instances at once. Returns how many rows it deleted.
   */
  reap(options: { limit: number }): Promise<number>;
  /** Counts what needs attention. */
  stuckReport(options: { graceMs: number }): Promise<StuckReport>;
  /** Lists records that need attention (same classes as {@link stuckReport}), oldest first. */
  listStuck(options: { graceMs: number; limit: number }): Promise<RecoveryRecord[]>;
  /**
   * Operator resolution of an unsettled or stuck record, fenced by version: sets the state (and
   * response), bumps the version, drops the lease, and writes an audit row in the same
   * transaction. Keeps `takeoverAfter`: a key released while an external call may still be in
   * flight is taken over by no claim before then. False when the record changed since the
   * operator read it.
   */
  resolve(fence: Fence, resolution: Resolution): Promise<boolean>;
  /** The audit rows of a record, oldest first. */
  listAudit(recordId: string): Promise<AuditEntry[]>;
  /**
   * Erases what a scope's records hold about the user: stored responses, inputs and step results.
   * Keeps the de-duplication identifiers (scope, procedure, key hash, fingerprint, state,
   * operation id) so a late retry is still recognised. Returns how many records it erased.
   */
  eraseScope(scope: string): Promise<number>;
}
