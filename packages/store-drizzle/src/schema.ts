import type { RecordState } from '@idem/contract';
import { sql } from 'drizzle-orm';
import {
  bigint,
  check,
  index,
  integer,
  pgTable,
  text,
  timestamp,
  unique,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';

/**
 * The states the CHECK constraint admits: every `RecordState` (the compiler checks the list is
 * complete; a test checks it against `recordStateSchema`). Spelled out rather than imported at
 * runtime so that drizzle-kit can load this file without building `@idem/contract` first.
 */
export const RECORD_STATES = [
  'PENDING',
  'IN_PROGRESS',
  'COMPLETED',
  'RETRYABLE_FAILURE',
  'TERMINAL_FAILURE',
  'OUTCOME_UNKNOWN',
  'NEEDS_RECONCILIATION',
] as const satisfies readonly RecordState[];
type Assert<T extends true> = T;
export type EveryStateListed = Assert<
  [Exclude<RecordState, (typeof RECORD_STATES)[number]>] extends [never] ? true : false
>;

/** States the reaper may delete (`REAPABLE_STATES` of the contract; a test checks they match). */
export const REAPABLE = [
  'COMPLETED',
  'TERMINAL_FAILURE',
  'RETRYABLE_FAILURE',
] as const satisfies readonly RecordState[];

/** States that wait for a worker or an operator: what the stuck report counts (with IN_PROGRESS). */
export const ATTENTION = [
  'PENDING',
  'OUTCOME_UNKNOWN',
  'NEEDS_RECONCILIATION',
] as const satisfies readonly RecordState[];

/** A list of string constants as SQL literals. The values are ours (contract enums), never input. */
function literalList(values: readonly string[]) {
  return sql.raw(values.map((value) => `'${value.replaceAll("'", "''")}'`).join(', '));
}

function timestamptz(name: string) {
  return timestamp(name, { withTimezone: true, mode: 'date' });
}

/** The partial unique index that arbitrates every claim of a key (see claimStatements.ts). */
export const LIVE_KEY_INDEX = 'idem_records_live_key_unique';

/**
 * The key table. One live row per `(scope, procedure, key_hash)`; a key past its replay window is
 * a new request, so its old row is marked `superseded_at` (kept for operators until the reaper
 * deletes it) and a new live row is inserted. Every instant is written by the database clock.
 */
export const idemRecords = pgTable(
  'idem_records',
  {
    /** Handed out as a decimal string. */
    id: bigint('id', { mode: 'bigint' }).primaryKey().generatedAlwaysAsIdentity(),
    scope: text('scope').notNull(),
    procedure: text('procedure').notNull(),
    /** SHA-256 (hex) of the idempotency key; the key itself is never stored. */
    keyHash: text('key_hash').notNull(),
    fingerprint: text('fingerprint').notNull(),
    fingerprintVersion: integer('fingerprint_version').notNull(),
    state: text('state', { enum: RECORD_STATES }).notNull(),
    /** Fencing token, bumped by every change of owner. */
    version: integer('version').notNull().default(1),
    leaseOwner: text('lease_owner'),
    leaseExpiresAt: timestamptz('lease_expires_at'),
    attempts: integer('attempts').notNull().default(1),
    recoveryPoint: text('recovery_point'),
    operationId: uuid('operation_id').notNull().defaultRandom(),
    responseStatus: integer('response_status'),
    /** Text, not jsonb: jsonb reorders keys, and a replay must be byte for byte the original. */
    responseBody: text('response_body'),
    createdAt: timestamptz('created_at').notNull(),
    updatedAt: timestamptz('updated_at').notNull(),
    completedAt: timestamptz('completed_at'),
    replayExpiresAt: timestamptz('replay_expires_at'),
    purgeAfter: timestamptz('purge_after'),
    supersededAt: timestamptz('superseded_at'),
    /** The input the completer resumes with, as the server stored it (possibly encrypted). */
    inputText: text('input_text'),
    /** The committed steps, JSON written by the server. Text, not jsonb: stored as written. */
    steps: text('steps'),
    /** When the first irreversible step (an external call) was about to start. */
    irreversibleAt: timestamptz('irreversible_at'),
    /** When `eraseScope` cleared the response, input and steps. */
    erasedAt: timestamptz('erased_at'),
    /**
     * Set by the intent write before an external call: the instant after which that call can no
     * longer be in flight (the lease it extended, plus the call's time limit). No takeover, by a
     * claim or the completer, before it: a new owner's lookup would race the call. Cleared when
     * the step is recorded done; kept by `markUnsettled`.
     */
    takeoverAfter: timestamptz('takeover_after'),
    /** Takeovers of abandoned work (expired lease, unknown outcome), by claims and completers. */
    takeovers: integer('takeovers').notNull().default(0),
    /** Why the record went to NEEDS_RECONCILIATION (a `ReconciliationReason`); null otherwise. */
    reconcileReason: text('reconcile_reason'),
  },
  (t) => [
    check('idem_records_state_check', sql`${t.state} IN (${literalList(RECORD_STATES)})`),
    unique('idem_records_operation_id_unique').on(t.operationId),
    // Arbitrates every claim: `INSERT ... ON CONFLICT (scope, procedure, key_hash)
    // WHERE superseded_at IS NULL DO NOTHING`. Partial, so superseded rows may share the key.
    uniqueIndex(LIVE_KEY_INDEX)
      .on(t.scope, t.procedure, t.keyHash)
      .where(sql`${t.supersededAt} IS NULL`),
    // The completer's scan for abandoned work.
    index('idem_records_expired_lease_idx')
      .on(t.leaseExpiresAt)
      .where(sql`${t.state} = 'IN_PROGRESS'`),
    // The reaper's scan for rows past their cleanup threshold.
    index('idem_records_purge_idx')
      .on(t.purgeAfter)
      .where(sql`${t.state} IN (${literalList(REAPABLE)})`),
    // Records that wait for someone: the completer's OUTCOME_UNKNOWN scan (oldest first), the
    // stuck report and list. These rows are few, so the index stays small.
    index('idem_records_attention_idx')
      .on(t.state, t.updatedAt)
      .where(sql`${t.state} IN (${literalList(ATTENTION)})`),
    // eraseScope's scan of superseded rows. Live rows are found through the leading `scope` of
    // `idem_records_live_key_unique`; a full `(scope)` index would cost every fresh claim.
    index('idem_records_superseded_scope_idx')
      .on(t.scope)
      .where(sql`${t.supersededAt} IS NOT NULL`),
  ],
);

/**
 * Operator actions on records (`resolve`), one row each. `record_id` has no foreign key: the
 * reaper deletes records and their audit rows stay. Every action is a transition of the state
 * machine, so its states and version are NOT NULL (as `AuditEntry` declares them); an action
 * without one would need them relaxed, a metadata-only ALTER.
 */
export const idemAudit = pgTable(
  'idem_audit',
  {
    /** Handed out as a decimal string. */
    id: bigint('id', { mode: 'bigint' }).primaryKey().generatedAlwaysAsIdentity(),
    recordId: bigint('record_id', { mode: 'bigint' }).notNull(),
    operationId: uuid('operation_id').notNull(),
    actor: text('actor').notNull(),
    action: text('action').notNull(),
    fromState: text('from_state', { enum: RECORD_STATES }).notNull(),
    toState: text('to_state', { enum: RECORD_STATES }).notNull(),
    fromVersion: integer('from_version').notNull(),
    note: text('note').notNull(),
    at: timestamptz('at').notNull(),
  },
  (t) => [
    index('idem_audit_record_id_idx').on(t.recordId),
    index('idem_audit_operation_id_idx').on(t.operationId),
  ],
);
