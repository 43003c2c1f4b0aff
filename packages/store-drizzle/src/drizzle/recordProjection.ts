import type { ReconciliationReason, RecordState, RecoveryRecord } from '@idem/contract';
import { sql, type SQL } from 'drizzle-orm';

/**
 * A record row as the store's raw statements return it. Every value is normalised in SQL so that
 * both drivers hand back the same JavaScript types: ids as text, instants as the driver's `Date`,
 * flags computed by the database clock.
 */
export interface RecordRow {
  id: string;
  scope: string;
  procedure: string;
  key_hash: string;
  fingerprint: string;
  fingerprint_version: number;
  state: RecordState;
  version: number;
  lease_owner: string | null;
  lease_expires_at: Instant | null;
  attempts: number;
  recovery_point: string | null;
  operation_id: string;
  response_status: number | null;
  response_body: string | null;
  created_at: Instant;
  updated_at: Instant;
  completed_at: Instant | null;
  replay_expires_at: Instant | null;
  purge_after: Instant | null;
  steps: string | null;
  input_text: string | null;
  irreversible_at: Instant | null;
  erased_at: Instant | null;
  superseded_at: Instant | null;
  takeover_after: Instant | null;
  takeovers: number;
  reconcile_reason: ReconciliationReason | null;
  lease_expired: boolean;
  /** An external call may still be in flight (`takeover_after > clock`): no takeover yet. */
  takeover_blocked: boolean;
  lease_remaining_ms: number;
  /** The replay window has closed (`replay_expires_at <= clock`): the key is a new request. */
  replay_expired: boolean;
}

/**
 * The select list of a record read through `alias` (a table alias or CTE name of the statement),
 * with the lease and replay flags computed against `clock`.
 */
export function recordProjection(alias: string, clock: SQL): SQL {
  const c = (column: string) => sql.raw(`${alias}.${column}`);
  return sql`
    ${c('id')}::text AS id,
    ${c('scope')} AS scope,
    ${c('procedure')} AS procedure,
    ${c('key_hash')} AS key_hash,
    ${c('fingerprint')} AS fingerprint,
    ${c('fingerprint_version')} AS fingerprint_version,
    ${c('state')} AS state,
    ${c('version')} AS version,
    ${c('lease_owner')} AS lease_owner,
    ${c('lease_expires_at')} AS lease_expires_at,
    ${c('attempts')} AS attempts,
    ${c('recovery_point')} AS recovery_point,
    ${c('operation_id')}::text AS operation_id,
    ${c('response_status')} AS response_status,
    ${c('response_body')} AS response_body,
    ${c('created_at')} AS created_at,
    ${c('updated_at')} AS updated_at,
    ${c('completed_at')} AS completed_at,
    ${c('replay_expires_at')} AS replay_expires_at,
    ${c('purge_after')} AS purge_after,
    ${c('steps')} AS steps,
    ${c('input_text')} AS input_text,
    ${c('irreversible_at')} AS irreversible_at,
    ${c('erased_at')} AS erased_at,
    ${c('superseded_at')} AS superseded_at,
    ${c('takeover_after')} AS takeover_after,
    ${c('takeovers')} AS takeovers,
    ${c('reconcile_reason')} AS reconcile_reason,
    coalesce(${c('lease_expires_at')} <= ${clock}, false) AS lease_expired,
    coalesce(${c('takeover_after')} > ${clock}, false) AS takeover_blocked,
    coalesce(
      greatest(ceil(extract(epoch from ${c('lease_expires_at')} - ${clock}) * 1000), 0),
      0
    )::float8 AS lease_remaining_ms,
    coalesce(${c('replay_expires_at')} <= ${clock}, false) AS replay_expired`;
}

/**
 * An instant as the driver hands it out: postgres.js and PGlite both parse `timestamptz` into a
 * `Date` (a string or epoch number is accepted too). Converting to epoch milliseconds in SQL made
 * every read several times dearer to plan and run, for nothing.
 */
type Instant = Date | string | number;

function toDate(value: Instant): Date;
function toDate(value: Instant | null): Date | null;
function toDate(value: Instant | null): Date | null {
  if (value === null) return null;
  if (value instanceof Date) return value;
  return new Date(typeof value === 'number' ? Math.floor(value) : value);
}

/**
 * The record the store hands out, from a row selected through {@link recordProjection}: every
 * record carries its recovery fields, whichever method read it.
 */
export function toRecoveryRecord(row: RecordRow): RecoveryRecord {
  return {
    id: row.id,
    scope: row.scope,
    procedure: row.procedure,
    keyHash: row.key_hash,
    fingerprint: row.fingerprint,
    fingerprintVersion: row.fingerprint_version,
    state: row.state,
    version: row.version,
    leaseOwner: row.lease_owner,
    leaseExpiresAt: toDate(row.lease_expires_at),
    attempts: row.attempts,
    recoveryPoint: row.recovery_point,
    operationId: row.operation_id,
    responseStatus: row.response_status,
    responseBody: row.response_body,
    createdAt: toDate(row.created_at),
    updatedAt: toDate(row.updated_at),
    completedAt: toDate(row.completed_at),
    replayExpiresAt: toDate(row.replay_expires_at),
    purgeAfter: toDate(row.purge_after),
    steps: row.steps,
    inputText: row.input_text,
    irreversibleAt: toDate(row.irreversible_at),
    erasedAt: toDate(row.erased_at),
    supersededAt: toDate(row.superseded_at),
    takeoverAfter: toDate(row.takeover_after),
    takeovers: row.takeovers,
    reconcileReason: row.reconcile_reason,
    leaseExpired: row.lease_expired,
    replayExpired: row.replay_expired,
    leaseRemainingMs: row.lease_remaining_ms,
  };
}
