import type { RecordState } from './recordState.js';

/** One row of the key table, as the store hands it out. Times come from the database clock. */
export interface IdempotencyRecord {
  /** Stable bigint primary key, as a decimal string. */
  id: string;
  scope: string;
  procedure: string;
  /** SHA-256 (hex) of the idempotency key; the key itself is never stored. */
  keyHash: string;
  fingerprint: string;
  fingerprintVersion: number;
  state: RecordState;
  /** Fencing token: bumped by every change of owner. Writes are conditioned on it. */
  version: number;
  leaseOwner: string | null;
  leaseExpiresAt: Date | null;
  /** How many workers have claimed this record (1 for a fresh claim). */
  attempts: number;
  /** Name of the last committed phase, or null before the first. */
  recoveryPoint: string | null;
  /** Stable id handed to downstream systems so they can de-duplicate too. */
  operationId: string;
  /** HTTP status of the stored response (COMPLETED, TERMINAL_FAILURE). */
  responseStatus: number | null;
  /** Stored response body, as text, replayed byte for byte. */
  responseBody: string | null;
  createdAt: Date;
  updatedAt: Date;
  completedAt: Date | null;
  /** After this instant the key is a new request. */
  replayExpiresAt: Date | null;
  /** After this instant the reaper may delete the record. */
  purgeAfter: Date | null;
  /** Computed by the database when the row was read: the lease has run out. */
  leaseExpired: boolean;
  /**
   * Computed by the database when the row was read: the replay window has closed
   * (`replayExpiresAt` passed), so the key is a new request.
   */
  replayExpired: boolean;
  /** Computed by the database when the row was read: milliseconds left on the lease (0 if none). */
  leaseRemainingMs: number;
}

/** What a claim asks for. */
export interface ClaimInput {
  scope: string;
  procedure: string;
  keyHash: string;
  fingerprint: string;
  fingerprintVersion: number;
  /** Lease granted to the claimer, in milliseconds. */
  leaseMs: number;
  /** Who claims (process/worker id), recorded as the lease owner. */
  owner: string;
  /**
   * The input the completer needs to resume the work without the client (external mode), as text
   * the server prepared (possibly encrypted). Stored on a fresh claim only. Defaults to none.
   */
  input?: string | null;
  /**
   * Milliseconds to wait on the unique index behind another transaction's uncommitted claim.
   * Only meaningful inside a transaction (local mode); on timeout the result is `busy`.
   */
  lockTimeoutMs?: number;
  /**
   * A takeover of abandoned work (expired lease, unknown outcome) when the record was already
   * taken over this many times moves it to NEEDS_RECONCILIATION (reason `takeover_limit`)
   * instead; the claim then answers `existing` with `reconciled` set. A released key
   * (RETRYABLE_FAILURE) is not abandoned work and does not count. Defaults to
   * `DEFAULT_MAX_TAKEOVERS` (5).
   */
  maxTakeovers?: number;
  /**
   * Stores a fresh row PENDING, without a lease: queued work that a worker takes later
   * (`takePending` of the recovery store). An existing row is answered as usual. Defaults to false.
   */
  pending?: boolean;
  /**
   * The operation id a fresh row gets (a UUID); an existing row keeps its own. idem's server
   * passes a time-ordered one (version 7), which keeps the store's unique index on operation ids
   * growing at its right edge. Defaults to a random one made by the store (version 4).
   */
  operationId?: string;
}

/**
 * The outcome of a claim.
 *
 * - `claimed`: the caller owns the record (`IN_PROGRESS`, fresh lease) and must run the work.
 *   `takeover` says whether an earlier owner's expired lease or released key was taken over;
 *   `fresh` claims have `attempts === 1`.
 * - `existing`: another request owns or finished the key: answer from `record`'s state. The
 *   record may carry a different fingerprint (then the answer is 422 key reused).
 *   `reconciled` is set when this claim's takeover hit the takeover cap (`maxTakeovers`) and moved
 *   the record to NEEDS_RECONCILIATION.
 * - `busy`: another transaction holds an uncommitted claim on the key and the lock wait ran out,
 *   or an external call of the record may still be in flight (its owner's lease plus the call's
 *   time limit have not passed yet): retry later.
 */
export type ClaimResult =
  | { kind: 'claimed'; record: IdempotencyRecord; takeover: boolean }
  | { kind: 'existing'; record: IdempotencyRecord; reconciled?: 'takeover_limit' }
  | { kind: 'busy' };

/** Identifies the record and owner a write is fenced by. */
export interface Fence {
  id: string;
  version: number;
}

/** The outcome stored for replay. */
export interface StoredResponse {
  status: number;
  body: string;
  /** Milliseconds from completion during which the response is replayed. */
  replayWindowMs: number;
  /** Milliseconds from completion after which the record may be deleted. */
  retentionMs: number;
}

/**
 * What a request is answered from when its key already holds a row: the state, the request that
 * made it (fingerprint), and the stored response. A subset of {@link IdempotencyRecord}.
 */
export type KeyAnswer = Pick<
  IdempotencyRecord,
  | 'state'
  | 'fingerprint'
  | 'fingerprintVersion'
  | 'operationId'
  | 'responseStatus'
  | 'responseBody'
  | 'replayExpired'
>;

/**
 * The record a local-mode request writes when it takes its key at commit (`claim: 'at-commit'`):
 * a fresh key's outcome, COMPLETED or TERMINAL_FAILURE, with the response to replay. Version 1,
 * one attempt, no lease: nothing of it exists before it commits.
 */
export interface OutcomeRecord {
  scope: string;
  procedure: string;
  keyHash: string;
  fingerprint: string;
  fingerprintVersion: number;
  /** Chosen by the server before the handler runs (the handler sees it as `ctx.idem.operationId`). */
  operationId: string;
  state: 'COMPLETED' | 'TERMINAL_FAILURE';
  response: StoredResponse;
  /**
   * Milliseconds the INSERT may wait on the unique index behind another transaction's
   * uncommitted row for the key; past it the result is `busy`.
   */
  lockTimeoutMs: number;
}

/**
 * The outcome of {@link IdempotencyStore.commitWithRecord}.
 *
 * - `recorded`: the work and its record committed together; `value` is what the work returned.
 * - `taken`: the key already had a live row (committed by a concurrent request, or before): the
 *   transaction rolled back, the work's writes with it. Read the key and answer from its row.
 * - `busy`: another transaction's uncommitted row held the key longer than `lockTimeoutMs`: the
 *   transaction rolled back.
 */
export type RecordedAtCommit<T> =
  { kind: 'recorded'; value: T } | { kind: 'taken' } | { kind: 'busy' };

/**
 * The key store. One implementation against Drizzle's Postgres core serves postgres.js and PGlite.
 *
 * `TTx` is the transaction handle the store's `transaction` hands out and every method accepts as
 * `tx`. Without `tx`, a method runs on its own connection and commits at once.
 *
 * Fenced writes (`complete`, `fail`, `release`, ...) return `false` when no row matched the fence:
 * the caller lost ownership (its lease was taken over) and must discard its result.
 */
export interface IdempotencyStore<TTx = unknown> {
  /** Runs `fn` in one database transaction; commits when it resolves, rolls back when it throws. */
  transaction<T>(fn: (tx: TTx) => Promise<T>): Promise<T>;
  /** Claims a key atomically. See {@link ClaimResult}. */
  claim(input: ClaimInput, tx?: TTx): Promise<ClaimResult>;
  /** Reads the live record for a key, or null. */
  read(
    key: { scope: string; procedure: string; keyHash: string },
    tx?: TTx,
  ): Promise<IdempotencyRecord | null>;
  /** Stores a success (`COMPLETED`) for replay. */
  complete(fence: Fence, response: StoredResponse, tx?: TTx): Promise<boolean>;
  /** Stores a deterministic failure (`TERMINAL_FAILURE`) for replay. */
  fail(fence: Fence, response: StoredResponse, tx?: TTx): Promise<boolean>;
  /**
   * Releases the key after a transient failure (`RETRYABLE_FAILURE`): the next claim takes the
   * record over and runs again, resuming from its recorded steps. Nothing is stored for replay;
   * the record may be deleted `retentionMs` after the release (the procedure's retention, which
   * idem's server keeps at least its replay window) if no one claims it again.
   */
  release(fence: Fence, windows: Pick<StoredResponse, 'retentionMs'>, tx?: TTx): Promise<boolean>;
  /**
   * Local mode, the key taken at commit: runs `work` in one transaction and, when it resolves,
   * inserts its `record` as the transaction's last statement, sent together with COMMIT where
   * the driver can pipeline (postgres.js), so the record costs no round trip of its own. The
   * INSERT fails on the key's live row (the unique index), which rolls the whole transaction
   * back: see {@link RecordedAtCommit}. A `work` that throws rolls back and rethrows.
   */
  commitWithRecord<T>(
    work: (tx: TTx) => Promise<{ value: T; record: OutcomeRecord }>,
  ): Promise<RecordedAtCommit<T>>;
  /**
   * Reads what the live row of a key answers with (see {@link KeyAnswer}), or null: the one
   * statement of a replay at commit, slimmer than {@link read}.
   */
  readAnswer(key: { scope: string; procedure: string; keyHash: string }): Promise<KeyAnswer | null>;
  /**
   * Inserts a fresh key's outcome on its own (a stored failure, after the work's transaction
   * rolled back), unless the key has a live row: then nothing is written and it returns false.
   */
  insertOutcome(record: OutcomeRecord): Promise<boolean>;
}
