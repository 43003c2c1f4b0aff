import { DEFAULT_MAX_TAKEOVERS, type Fence, type ReconciliationReason } from '@idem/contract';
import { sql, type SQL } from 'drizzle-orm';
import { recordId } from '../../drizzle/assertMilliseconds.js';
import { stillOwned, unlessErased } from './completionStatements.js';
import { milliseconds } from '../../drizzle/databaseClock.js';
import { recordProjection } from '../../drizzle/recordProjection.js';
import { idemRecords } from '../../schema.js';

/*
 * The statements of phased (external-mode) work and of the completer. Every write is fenced:
 *
 *   stillOwned     id = the owner's record AND version = the owner's version
 *                  AND state = 'IN_PROGRESS'
 *   callSettled    takeover_after IS NULL OR takeover_after <= clock: no external call of the
 *                  record can still be in flight (see `callIntent` below)
 *   abandoned      superseded_at IS NULL AND callSettled AND (
 *                    (state = 'IN_PROGRESS' AND lease_expires_at <= clock)  -- the worker is gone
 *                    OR state = 'OUTCOME_UNKNOWN')                          -- a lookup is owed
 *   takeoverCapped takeovers >= maxTakeovers: the takeover moves the record to
 *                  NEEDS_RECONCILIATION (reason 'takeover_limit') instead of handing it out
 *
 * Every change of owner (a claim's takeover, the completer's takeover, cancel, resolve) bumps
 * `version`, so `stillOwned` of the previous owner matches no row from then on.
 *
 * A worker whose lease ran out, and the completer that takes its record over:
 *
 *   W: saveSteps(v)             1 row: steps committed, lease extended
 *      ... W stalls (GC pause, lost network) past its lease ...
 *   C: takeOverAbandoned        the row is abandoned: version v + 1, owner C, a fresh lease
 *   W: saveSteps(v), complete(v)    waits for C's row lock if C has not committed, then re-checks
 *                               against C's row: version v + 1, 0 rows. W stops and discards.
 *   C: resumes from W's last committed steps (the phase W was in when it stalled runs again;
 *      an external call whose intent W recorded is looked up, never blindly repeated).
 *
 * The intent before an external call (`saveSteps` with `callTimeLimitMs` = T, lease L) is the
 * fence of the call itself: it runs immediately before every call, the first and one after a
 * lookup answered "not found" alike, and sets
 *
 *   lease_expires_at = clock + T + L        the call (aborted at T) and recording its result fit
 *   takeover_after   = lease_expires_at + T the call cannot be in flight after this instant
 *
 * A stale worker W (it waited before its call, a lookup or a GC pause) and a new owner N:
 *
 *   W: takes the record at version v; waits ...
 *   N: takeover (claim or completer)        W's lease ran out and callSettled: version v + 1
 *   N: lookup: not found; saveSteps(v + 1, intent)   1 row; N calls
 *   W: saveSteps(v, intent)                 0 rows (version v + 1): W stops WITHOUT calling
 *
 * The same two when W's intent came first:
 *
 *   W: saveSteps(v, intent)                 1 row: lease to t + T + L, takeover_after t + 2T + L
 *   W: calls (aborted at t + T at the latest; a timeout leaves OUTCOME_UNKNOWN, which keeps
 *      takeover_after)
 *   N: takeover before t + 2T + L           callSettled is false: 0 rows; a claim answers busy
 *   N: takeover after t + 2T + L            W's call is over: N's lookup's "not found" means
 *                                           "not received", so N may call again
 *
 * Clearing `takeover_after` when the call's result is recorded (`callSettled: true`) re-opens
 * takeovers at the lease's end, as for any other step.
 */

/** No external call of the record can still be in flight (see the top of the file). */
export function callSettled(alias: string, clock: SQL): SQL {
  const c = (column: string) => sql.raw(`${alias}.${column}`);
  return sql`(${c('takeover_after')} IS NULL OR ${c('takeover_after')} <= ${clock})`;
}

/** What the completer may take over, for rows read through `alias` (see the top of the file). */
function abandoned(alias: string, clock: SQL): SQL {
  const c = (column: string) => sql.raw(`${alias}.${column}`);
  return sql`${c('superseded_at')} IS NULL
    AND ${callSettled(alias, clock)}
    AND (
      (${c('state')} = 'IN_PROGRESS' AND ${c('lease_expires_at')} <= ${clock})
      OR ${c('state')} = 'OUTCOME_UNKNOWN'
    )`;
}

/**
 * The SET list of a takeover of abandoned work by `owner` (table aliased `r`), with the poison
 * cap decided in the same statement: a record already taken over `maxTakeovers` times goes to
 * NEEDS_RECONCILIATION, owned by nobody, instead. `counts` says whether this takeover counts
 * (false for a released key, which is not abandoned work).
 */
export function takeoverSet(
  owner: string,
  leaseMs: number,
  maxTakeovers: number,
  counts: SQL,
  clock: SQL,
): SQL {
  const capped = sql`(${counts} AND r.takeovers >= ${maxTakeovers}::integer)`;
  return sql`state = CASE WHEN ${capped} THEN 'NEEDS_RECONCILIATION' ELSE 'IN_PROGRESS' END,
        version = r.version + 1,
        attempts = CASE WHEN ${capped} THEN r.attempts ELSE r.attempts + 1 END,
        takeovers = CASE WHEN ${capped} OR NOT ${counts} THEN r.takeovers
          ELSE r.takeovers + 1 END,
        reconcile_reason = CASE WHEN ${capped} THEN 'takeover_limit' ELSE NULL END,
        lease_owner = CASE WHEN ${capped} THEN NULL ELSE ${owner}::text END,
        lease_expires_at = CASE WHEN ${capped} THEN NULL
          ELSE ${clock} + ${milliseconds(leaseMs)} END,
        purge_after = NULL,
        updated_at = ${clock}`;
}

/** What `saveSteps` writes. */
export interface StepsUpdate {
  steps: string;
  recoveryPoint: string | null;
  leaseMs: number;
  irreversible?: boolean;
  /** The intent right before an external call with this time limit (see the top of the file). */
  callTimeLimitMs?: number;
  /** The external call's result is recorded: clears `takeover_after`. */
  callSettled?: boolean;
}

/**
 * Commits the owner's steps and recovery point and extends its lease to `leaseMs` from now.
 * `irreversible` stamps `irreversible_at` once (a later stamp keeps the first instant). Returns
 * the id when the fence held.
 *
 * On an erased record the steps are not written back (`notErased`; the timeline of an owner
 * running through an erasure is in completionStatements.ts). The rest moves on as usual, so an
 * intent still stamps `irreversible_at`, and every step its recovery point: a record left with
 * either and no steps is never re-run blind (the server hands it to an operator, reason
 * `erased_after_call` or `erased_after_step`).
 */
export function saveSteps(fence: Fence, update: StepsUpdate, clock: SQL): SQL {
  const irreversibleAt =
    update.irreversible === true
      ? sql`coalesce(r.irreversible_at, ${clock})`
      : sql`r.irreversible_at`;
  const call = update.callTimeLimitMs;
  const leaseEnd =
    call === undefined
      ? sql`${clock} + ${milliseconds(update.leaseMs)}`
      : sql`${clock} + ${milliseconds(call + update.leaseMs)}`;
  const takeoverAfter =
    call !== undefined
      ? sql`${clock} + ${milliseconds(2 * call + update.leaseMs)}`
      : update.callSettled === true
        ? sql`NULL`
        : sql`r.takeover_after`;
  return sql`UPDATE ${idemRecords} AS r
    SET steps = ${unlessErased(sql`${update.steps}::text`)},
      recovery_point = ${update.recoveryPoint}::text,
      irreversible_at = ${irreversibleAt},
      lease_expires_at = ${leaseEnd},
      takeover_after = ${takeoverAfter},
      updated_at = ${clock}
    WHERE ${stillOwned(fence)}
    RETURNING r.id::text AS id`;
}

/**
 * Heartbeat: the owner's lease ends `leaseMs` from now, or later if it already did (a heartbeat
 * never shortens the lease an intent extended over its call). Returns the id when the fence held.
 */
export function extendLease(fence: Fence, leaseMs: number, clock: SQL): SQL {
  return sql`UPDATE ${idemRecords} AS r
    SET lease_expires_at = greatest(r.lease_expires_at, ${clock} + ${milliseconds(leaseMs)}),
      updated_at = ${clock}
    WHERE ${stillOwned(fence)}
    RETURNING r.id::text AS id`;
}

/** The states `markUnsettled` moves to. */
export const UNSETTLED = ['OUTCOME_UNKNOWN', 'NEEDS_RECONCILIATION'] as const;

/**
 * Moves the owner's record to an unsettled state and drops the lease. No cleanup time: the reaper
 * never deletes an unsettled record, whatever its age. `takeover_after` stays: a lookup never
 * runs while the call can still be in flight. Returns the id when the fence held.
 */
export function markUnsettled(
  fence: Fence,
  state: (typeof UNSETTLED)[number],
  reason: ReconciliationReason | null,
  clock: SQL,
): SQL {
  return sql`UPDATE ${idemRecords} AS r
    SET state = ${state}::text,
      reconcile_reason = ${state === 'NEEDS_RECONCILIATION' ? reason : null}::text,
      lease_owner = NULL,
      lease_expires_at = NULL,
      purge_after = NULL,
      updated_at = ${clock}
    WHERE ${stillOwned(fence)}
    RETURNING r.id::text AS id`;
}

/** What `takeOverAbandoned` asks for. */
export interface TakeOverOptions {
  owner: string;
  leaseMs: number;
  limit: number;
  procedures: readonly string[];
  /** Defaults to `DEFAULT_MAX_TAKEOVERS`. */
  maxTakeovers?: number;
}

/**
 * The completer's takeover, one statement: picks at most `limit` abandoned records of
 * `procedures`, oldest first (by lease expiry for IN_PROGRESS, by last change for
 * OUTCOME_UNKNOWN), and hands each to `owner` with a fresh lease, `version`, `attempts` and
 * `takeovers` bumped; or, past the cap (`takeoverCapped`), moves it to NEEDS_RECONCILIATION.
 * The completer asks for one record at a time and finishes it before asking again.
 *
 * Two completers A and B on the same abandoned rows:
 *
 *   A: picked: SELECT ... FOR UPDATE SKIP LOCKED      locks up to `limit` rows
 *   B: picked: the same SELECT                        skips every row A holds (no wait) and locks
 *                                                     others, or none
 *   A: UPDATE ... FROM picked WHERE abandoned         version v + 1, owner A; COMMIT
 *   B, when its snapshot predates A's commit: the row is unlocked now; B locks it and re-checks
 *      `abandoned` against A's committed row (IN_PROGRESS, live lease): not picked. B may so
 *      return fewer than `limit` records while others wait; its next run takes them.
 *   A claim retrying the same key waits on A's row lock instead of skipping it, then finds
 *   version v + 1 and answers `existing` (see claimStatements.ts).
 *
 * `picked` is a MATERIALIZED CTE rather than `WHERE id IN (SELECT ... LIMIT ... SKIP LOCKED)`:
 * a semi-join may be planned to run its subquery more than once, and each run would lock (and
 * hand out) another set of rows. The outer UPDATE re-checks `abandoned` on the row it writes.
 */
export function takeOverAbandoned(options: TakeOverOptions, clock: SQL): SQL {
  return sql`WITH picked AS MATERIALIZED (
      SELECT c.id,
        CASE WHEN c.state = 'IN_PROGRESS' THEN c.lease_expires_at ELSE c.updated_at END AS since
      FROM ${idemRecords} AS c
      WHERE ${abandoned('c', clock)}
        AND c.procedure = ANY(${sql.param([...options.procedures])}::text[])
      ORDER BY since, c.id
      LIMIT ${options.limit}::integer
      FOR UPDATE OF c SKIP LOCKED
    ),
    taken AS (
      UPDATE ${idemRecords} AS r
      SET ${takeoverSet(
        options.owner,
        options.leaseMs,
        options.maxTakeovers ?? DEFAULT_MAX_TAKEOVERS,
        sql`true`,
        clock,
      )}
      FROM picked
      WHERE r.id = picked.id AND ${abandoned('r', clock)}
      RETURNING r.*, picked.since
    )
    SELECT ${recordProjection('taken', clock)} FROM taken ORDER BY taken.since, taken.id`;
}
