import type { Fence, Resolution, StoredResponse } from '@idem/contract';
import { sql, type SQL } from 'drizzle-orm';
import { assertMilliseconds, assertWindows, recordId } from '../../drizzle/assertMilliseconds.js';
import { releasedPurgeAfter, storedOutcome } from '../request/completionStatements.js';
import { recordProjection } from '../../drizzle/recordProjection.js';
import { idemAudit, idemRecords } from '../../schema.js';

/*
 * The statements of operators and of cancellation. They act on a record an operator (or a
 * client's cancel) read at some version, fenced by that version, from outside the lease: the
 * record's owner may be running at the same time.
 *
 *   unchanged   id = the record read AND version = the version read
 *   cancelable  state IN ('IN_PROGRESS', 'PENDING') AND irreversible_at IS NULL
 *   resolvable  state IN ('PENDING', 'IN_PROGRESS', 'OUTCOME_UNKNOWN', 'NEEDS_RECONCILIATION',
 *                         'RETRYABLE_FAILURE'): anything not yet settled for replay
 *
 * Each statement locks the row first (`target ... FOR UPDATE`), so what it reports about the row
 * (its state before, whether an irreversible step began) is the row it then writes.
 *
 * Cancel C against the owner W, who is about to start an external call:
 *
 *   W: saveSteps(v, irreversible)  commits irreversible_at (the intent), then calls out
 *   C: target: SELECT ... WHERE unchanged FOR UPDATE     waits for W's row lock if W has not
 *                                  committed, then reads W's row: irreversible -> 'irreversible',
 *                                  nothing written
 *   or, C first:
 *   C: UPDATE ... version v + 1, TERMINAL_FAILURE; COMMIT
 *   W: saveSteps(v, irreversible)  re-checks against C's row: 0 rows. W stops before the call.
 *
 * Resolve keeps `takeover_after` (set by the intent before an external call, see
 * recoveryStatements.ts) whatever it resolves to. An operator O releases the key
 * (RETRYABLE_FAILURE) while the owner W's call is in flight, and a retry N of the same request
 * arrives:
 *
 *   W: saveSteps(v, intent)        lease to t + T + L, takeover_after t + 2T + L; W calls
 *   O: resolve(v, RETRYABLE_FAILURE)   version v + 1, no lease, takeover_after kept
 *   N: claim before t + 2T + L     the released row is not callSettled: no takeover (see
 *                                  claimStatements.ts), N is answered 409 in progress. Were
 *                                  takeover_after cleared, N would take over, look W's call up
 *                                  ("not found": it has not landed yet) and call again: a
 *                                  double charge.
 *   W: saveSteps(v, done)          0 rows (version v + 1): W's result is discarded
 *   N: claim after t + 2T + L      W's call is over: N takes over, resumes at the intent, and its
 *                                  lookup finds W's call if it happened
 */

const RESOLVABLE = sql.raw(
  `'PENDING', 'IN_PROGRESS', 'OUTCOME_UNKNOWN', 'NEEDS_RECONCILIATION', 'RETRYABLE_FAILURE'`,
);

/**
 * Cancels unchanged, cancelable work: stores `response` as a TERMINAL_FAILURE, bumps the version
 * and drops the lease. Returns one row, `outcome`: 'cancelled', 'irreversible' (the row is
 * unchanged but an irreversible step began; nothing written) or 'stale'.
 */
export function cancel(fence: Fence, response: StoredResponse, clock: SQL): SQL {
  return sql`WITH target AS MATERIALIZED (
      SELECT t.id, t.irreversible_at IS NOT NULL AS irreversible
      FROM ${idemRecords} AS t
      WHERE t.id = ${recordId(fence.id)}::bigint
        AND t.version = ${fence.version}::integer
        AND t.state IN ('IN_PROGRESS', 'PENDING')
      FOR UPDATE OF t
    ),
    cancelled AS (
      UPDATE ${idemRecords} AS r
      SET state = 'TERMINAL_FAILURE',
        version = r.version + 1,
        lease_owner = NULL,
        lease_expires_at = NULL,
        ${storedOutcome(response, clock)},
        updated_at = ${clock}
      FROM target
      WHERE r.id = target.id
        AND NOT target.irreversible
        AND r.version = ${fence.version}::integer
        AND r.state IN ('IN_PROGRESS', 'PENDING')
        AND r.irreversible_at IS NULL
      RETURNING r.id
    )
    SELECT CASE
      WHEN EXISTS (SELECT 1 FROM cancelled) THEN 'cancelled'
      WHEN EXISTS (SELECT 1 FROM target WHERE target.irreversible) THEN 'irreversible'
      ELSE 'stale'
    END AS outcome`;
}

/**
 * Throws a TypeError for a resolution the state machine does not admit: a state other than
 * COMPLETED, TERMINAL_FAILURE or RETRYABLE_FAILURE; no response to COMPLETED or TERMINAL_FAILURE;
 * a response, or no `retentionMs`, to RETRYABLE_FAILURE (a released key stores no response, and
 * is kept for the procedure's retention); no actor. A RangeError for windows that are not whole
 * milliseconds from 0.
 */
export function assertResolution(resolution: Resolution): void {
  const { state, response, actor } = resolution;
  if (state !== 'COMPLETED' && state !== 'TERMINAL_FAILURE' && state !== 'RETRYABLE_FAILURE') {
    throw new TypeError(
      `a resolution sets COMPLETED, TERMINAL_FAILURE or RETRYABLE_FAILURE, got ${String(state)}`,
    );
  }
  if (state === 'RETRYABLE_FAILURE' && response !== undefined) {
    throw new TypeError('a RETRYABLE_FAILURE resolution releases the key and stores no response');
  }
  if (state === 'RETRYABLE_FAILURE') {
    if (resolution.retentionMs === undefined) {
      throw new TypeError(
        "a RETRYABLE_FAILURE resolution needs retentionMs: how long the released record and its steps are kept for the next retry (the procedure's retentionMs)",
      );
    }
    assertMilliseconds('retentionMs', resolution.retentionMs, 0);
  }
  if (state !== 'RETRYABLE_FAILURE' && response === undefined) {
    throw new TypeError(`a ${state} resolution needs the response to replay from now on`);
  }
  if (response !== undefined) assertWindows(response);
  if (actor.trim() === '') throw new TypeError('a resolution names its actor, for the audit row');
}

/**
 * Resolves an unchanged, resolvable record and writes its audit row, in one statement (so in one
 * transaction): both happen, or neither. COMPLETED and TERMINAL_FAILURE store `response` as
 * `complete` and `fail` do; RETRYABLE_FAILURE releases the key as `release` does (the next claim
 * runs again; cleanup `retentionMs` later). `takeover_after` stays (the timeline at the top of
 * the file). Returns one row: `n`, 1 when resolved.
 */
export function resolve(fence: Fence, resolution: Resolution, clock: SQL): SQL {
  const outcome =
    resolution.state === 'RETRYABLE_FAILURE'
      ? releasedPurgeAfter(resolution.retentionMs, clock)
      : storedOutcome(resolution.response, clock);
  return sql`WITH target AS MATERIALIZED (
      SELECT t.id, t.state, t.version
      FROM ${idemRecords} AS t
      WHERE t.id = ${recordId(fence.id)}::bigint
        AND t.version = ${fence.version}::integer
        AND t.state IN (${RESOLVABLE})
      FOR UPDATE OF t
    ),
    resolved AS (
      UPDATE ${idemRecords} AS r
      SET state = ${resolution.state}::text,
        version = r.version + 1,
        lease_owner = NULL,
        lease_expires_at = NULL,
        takeovers = 0,
        reconcile_reason = NULL,
        ${outcome},
        updated_at = ${clock}
      FROM target
      WHERE r.id = target.id
        AND r.version = ${fence.version}::integer
        AND r.state IN (${RESOLVABLE})
      RETURNING r.id, r.operation_id, target.state AS from_state, target.version AS from_version
    ),
    audited AS (
      INSERT INTO ${idemAudit} (
        record_id, operation_id, actor, action, from_state, to_state, from_version, note, at
      )
      SELECT id, operation_id, ${resolution.actor}::text, 'resolve', from_state,
        ${resolution.state}::text, from_version, ${resolution.note}::text, ${clock}
      FROM resolved
      RETURNING id
    )
    SELECT count(*)::integer AS n FROM audited`;
}
