import { DEFAULT_MAX_TAKEOVERS, type ClaimInput } from '@idem/contract';
import { sql, type SQL } from 'drizzle-orm';
import { milliseconds } from '../../drizzle/databaseClock.js';
import { recordProjection } from '../../drizzle/recordProjection.js';
import { callSettled, takeoverSet } from './recoveryStatements.js';
import { idemRecords } from '../../schema.js';

/*
 * The statements of a claim, with the conditions they decide on. Every condition is re-checked in
 * the WHERE clause (or the unique index) of the statement that acts on it; the application only
 * chooses which statement to try, it never checks and then acts.
 *
 *   keyIsFree          no live row (superseded_at IS NULL) for (scope, procedure, key_hash):
 *                      arbitrated by the partial unique index, INSERT ... ON CONFLICT DO NOTHING
 *   sameRequest        fingerprint = the claimer's fingerprint
 *   released           state = 'RETRYABLE_FAILURE'
 *   leaseRanOut        state = 'IN_PROGRESS' AND lease_expires_at <= clock
 *   outcomeUnknown     state = 'OUTCOME_UNKNOWN': the new owner looks the external call up
 *                      (by operation_id) before anything else. NEEDS_RECONCILIATION is never
 *                      taken over by a claim: only an operator's `resolve` moves it on.
 *   callSettled        takeover_after IS NULL OR takeover_after <= clock: required by released,
 *                      leaseRanOut and outcomeUnknown, so a new owner never looks an external
 *                      call up while the old owner's call can still be in flight (the timeline
 *                      is in recoveryStatements.ts). A release keeps takeover_after, the owner's
 *                      and an operator's alike (last timeline below). The claim answers
 *                      `busy` (an unknown outcome, a released key: claimKey.ts) or `existing`
 *                      (in progress) meanwhile: 409 in progress either way.
 *   takeoverCapped     takeovers >= maxTakeovers, for leaseRanOut and outcomeUnknown: the
 *                      takeover moves the record to NEEDS_RECONCILIATION instead (the same
 *                      statement, so the count cannot race), and the claim answers `existing`.
 *   replayWindowClosed state IN ('COMPLETED', 'TERMINAL_FAILURE') AND replay_expires_at <= clock
 *   unchangedSinceRead id = the row read AND version = the version read (the fence)
 *
 * Two racers A and B, same key, nothing stored yet (READ COMMITTED):
 *
 *   A: INSERT ... ON CONFLICT DO NOTHING        inserts; uncommitted while A's transaction runs
 *   B: INSERT ... ON CONFLICT DO NOTHING        waits on A's entry in the unique index, for at most
 *                                               lockTimeoutMs when given: then 55P03, B is `busy`
 *   A: COMMIT    B's INSERT does nothing. B's fallback SELECT runs on the statement's snapshot,
 *                taken before A committed, so it sees no row: the statement returns no record.
 *                B reads again (a new statement, a new snapshot) and answers `existing`.
 *   A: ROLLBACK  B's INSERT goes ahead: B has claimed the key.
 *
 * Two racers A and B, the same expired, released or unknown-outcome row read at version v (the
 * completer's `takeOverAbandoned` is a third racer on the same row lock, fenced the same way):
 *
 *   A: UPDATE ... WHERE unchangedSinceRead AND sameRequest AND callSettled
 *                   AND (released OR leaseRanOut OR outcomeUnknown)
 *                                               1 row: A owns the record at version v + 1
 *   B: the same UPDATE                          waits on A's row lock if A has not committed,
 *                                               then re-checks against A's row: version is v + 1,
 *                                               0 rows. B reads again: `existing`, IN_PROGRESS.
 *   the owner of version v, still running:      complete(version v) matches no row: it discards.
 *
 * Two racers A and B, the same completed row whose replay window has closed:
 *
 *   A: UPDATE SET superseded_at WHERE unchangedSinceRead AND replayWindowClosed   1 row
 *   B: the same UPDATE                                                            0 rows
 *   A and B: INSERT ... ON CONFLICT DO NOTHING  the unique index arbitrates as for a fresh key:
 *                                               one claims, the other is answered `existing`.
 *
 * A retry N of a key released while an external call of the last owner W may be in flight (W's
 * intent set takeover_after = t + 2T + L, recoveryStatements.ts; the release is W's own after a
 * failure it classed transient, or an operator's `resolve`, operatorStatements.ts):
 *
 *   W: saveSteps(v, intent); calls
 *   W or an operator: release          RETRYABLE_FAILURE, no lease, takeover_after kept
 *   N: UPDATE ... WHERE released AND callSettled, before t + 2T + L
 *                                      0 rows: nothing taken, N is answered 409 in progress.
 *                                      Were callSettled not required, N would own the record at
 *                                      once, look W's call up ("not found": it has not landed
 *                                      yet) and call again.
 *   N: the same UPDATE after t + 2T + L   1 row: W's call is over, N's lookup sees it
 */

/** The live-key condition of the unique index, for rows read through `alias`. */
function liveKey(alias: string, key: Pick<ClaimInput, 'scope' | 'procedure' | 'keyHash'>): SQL {
  const c = (column: string) => sql.raw(`${alias}.${column}`);
  return sql`${c('scope')} = ${key.scope}::text
    AND ${c('procedure')} = ${key.procedure}::text
    AND ${c('key_hash')} = ${key.keyHash}::text
    AND ${c('superseded_at')} IS NULL`;
}

/**
 * Builds a statement around one data-modifying CTE `w`. `modify` receives the FROM clause to
 * put in the INSERT's SELECT or the UPDATE (empty without a lock timeout); `select` reads `w`.
 *
 * With `lockTimeoutMs`, the lock wait of `w` (on the unique index, or on a row lock) is bounded
 * by `lock_timeout`, set with `set_config(..., true)` before `w` runs and restored once `w` has
 * run, in the same statement, so the caller's next statements (a handler's writes in local mode)
 * are not bounded by our timeout. The order is forced by data dependencies: `bound` reads
 * `saved`, `w` reads `bound`, and `restored` runs only after counting `w`'s rows. The statement
 * then always returns one row, whose columns are null when `select` found nothing.
 */
function withLockTimeout(
  lockTimeoutMs: number | undefined,
  modify: (from: SQL) => SQL,
  select: SQL,
): SQL {
  if (lockTimeoutMs === undefined) {
    return sql`WITH w AS (${modify(sql``)}) ${select}`;
  }
  return sql`WITH saved AS MATERIALIZED (
      SELECT current_setting('lock_timeout') AS lock_timeout
    ),
    bound AS MATERIALIZED (
      SELECT set_config('lock_timeout', ${`${lockTimeoutMs}ms`}::text, true) AS lock_timeout
      FROM saved
    ),
    w AS (${modify(sql`FROM bound`)}),
    restored AS MATERIALIZED (
      SELECT set_config('lock_timeout', saved.lock_timeout, true) AS lock_timeout
      FROM saved
      WHERE (SELECT count(*) FROM w) >= 0
    )
    SELECT found.* FROM restored LEFT JOIN LATERAL (${select}) found ON true`;
}

/**
 * Step 1 of a claim, one statement: inserts a fresh IN_PROGRESS row if the key is free
 * (`inserted` true), else returns the live row (`inserted` false). With `pending`, the fresh row
 * is PENDING without a lease (queued work, taken by `takePending`: see queueStatements.ts); the
 * unique index arbitrates racers the same way. Returns no record (no row, or
 * a row of nulls) when the INSERT waited for a concurrent claim that then committed: see the
 * first timeline above.
 */
export function insertOrGetLive(input: ClaimInput, clock: SQL): SQL {
  return withLockTimeout(
    input.lockTimeoutMs,
    (from) => sql`
      INSERT INTO ${idemRecords} AS r (
        scope, procedure, key_hash, fingerprint, fingerprint_version, state, version, attempts,
        lease_owner, lease_expires_at, created_at, updated_at, input_text${
          input.operationId === undefined ? sql`` : sql`, operation_id`
        }
      )
      SELECT ${input.scope}::text, ${input.procedure}::text, ${input.keyHash}::text,
        ${input.fingerprint}::text, ${input.fingerprintVersion}::integer,
        ${input.pending ? 'PENDING' : 'IN_PROGRESS'}::text, 1, 1,
        ${input.pending ? null : input.owner}::text,
        ${input.pending ? sql`NULL` : sql`${clock} + ${milliseconds(input.leaseMs)}`}, ${clock}, ${clock},
        ${input.input ?? null}::text${
          input.operationId === undefined ? sql`` : sql`, ${input.operationId}::uuid`
        }
      ${from}
      ON CONFLICT (scope, procedure, key_hash) WHERE superseded_at IS NULL DO NOTHING
      RETURNING r.*`,
    sql`
      SELECT true AS inserted, ${recordProjection('w', clock)} FROM w
      UNION ALL
      SELECT false AS inserted, ${recordProjection('live', clock)}
      FROM ${idemRecords} AS live
      WHERE ${liveKey('live', input)} AND NOT EXISTS (SELECT 1 FROM w)`,
  );
}

/** The live row of a key, read on a fresh snapshot. */
export function selectLive(
  key: Pick<ClaimInput, 'scope' | 'procedure' | 'keyHash'>,
  clock: SQL,
): SQL {
  return sql`SELECT ${recordProjection('live', clock)}
    FROM ${idemRecords} AS live
    WHERE ${liveKey('live', key)}`;
}

/** The row a takeover or supersede acts on, as it was read. */
export interface ReadRow {
  id: string;
  version: number;
}

/**
 * Takes over a released key, an expired lease or an unknown outcome for the same request (second
 * timeline above), in each case only once no external call of the record can be in flight
 * (`callSettled`; last timeline above): a new owner and lease, `version` and `attempts` bumped
 * (and `takeovers`, but for a released key). The stored input, steps and `irreversible_at` stay:
 * the new owner resumes from them. A cleanup time left by an earlier release is cleared (the
 * record is in progress again). Past the cap the record goes to NEEDS_RECONCILIATION instead
 * (`takeoverCapped`). Returns the record, or no record when another claimer got there first or
 * the call may still be in flight.
 */
export function takeOver(row: ReadRow, input: ClaimInput, clock: SQL): SQL {
  return withLockTimeout(
    input.lockTimeoutMs,
    (from) => sql`
      UPDATE ${idemRecords} AS r
      SET ${takeoverSet(
        input.owner,
        input.leaseMs,
        input.maxTakeovers ?? DEFAULT_MAX_TAKEOVERS,
        sql`r.state <> 'RETRYABLE_FAILURE'`,
        clock,
      )}
      ${from}
      WHERE r.id = ${row.id}::bigint
        AND r.version = ${row.version}::integer
        AND r.superseded_at IS NULL
        AND r.fingerprint = ${input.fingerprint}::text
        AND ${callSettled('r', clock)}
        AND (
          r.state = 'RETRYABLE_FAILURE'
          OR (r.state = 'IN_PROGRESS' AND r.lease_expires_at <= ${clock})
          OR r.state = 'OUTCOME_UNKNOWN'
        )
      RETURNING r.*`,
    sql`SELECT ${recordProjection('w', clock)} FROM w`,
  );
}

/**
 * Retires a completed or terminally failed row whose replay window has closed (third timeline
 * above): the key is a new request, and the old row stays, superseded, until the reaper deletes
 * it. Returns the id when this call superseded the row.
 */
export function supersede(row: ReadRow, lockTimeoutMs: number | undefined, clock: SQL): SQL {
  return withLockTimeout(
    lockTimeoutMs,
    (from) => sql`
      UPDATE ${idemRecords} AS r
      SET superseded_at = ${clock}, updated_at = ${clock}
      ${from}
      WHERE r.id = ${row.id}::bigint
        AND r.version = ${row.version}::integer
        AND r.superseded_at IS NULL
        AND r.state IN ('COMPLETED', 'TERMINAL_FAILURE')
        AND r.replay_expires_at <= ${clock}
      RETURNING r.id`,
    sql`SELECT w.id::text AS id FROM w`,
  );
}
