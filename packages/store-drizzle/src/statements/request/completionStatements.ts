import type { Fence, StoredResponse } from '@idem/contract';
import { sql, type SQL } from 'drizzle-orm';
import { recordId } from '../../drizzle/assertMilliseconds.js';
import { milliseconds } from '../../drizzle/databaseClock.js';
import { idemRecords } from '../../schema.js';

/*
 * The owner's last write: store the outcome for replay (`complete`, `fail`) or give the key back
 * (`release`). Each is one UPDATE, fenced:
 *
 *   stillOwned   id = the owner's record AND version = the owner's version
 *                AND state = 'IN_PROGRESS'
 *
 * The same fence guards every owner's write (`saveSteps`, `extendLease`, `markUnsettled` in
 * recoveryStatements.ts). Every change of owner (a claim's takeover, the completer's takeover,
 * cancel, resolve) bumps `version`, so the previous owner's fence matches no row from then on.
 *
 * An owner W whose lease ran out finishes while a retry N takes the key over:
 *
 *   W: claim (version v), runs the procedure ... stalls past its lease
 *   N: claim -> takeOver: lease expired, version v + 1, owner N, a fresh lease
 *   W: complete(v)     waits for N's row lock if N has not committed, then re-checks against
 *                      N's row: version v + 1, 0 rows. W gets false: its result is discarded
 *                      and its request answered 409 in progress
 *   N: complete(v + 1) 1 row: N's outcome is the one replayed
 *
 * Or W first:
 *
 *   W: complete(v)     1 row: COMPLETED, no lease
 *   N: claim           reads the COMPLETED row: a replay, nothing runs
 *
 * In local mode `complete`/`fail` run in the claim's transaction: the claim, the handler's writes
 * and the outcome commit together, or none does.
 *
 * An erasure changes no owner (`eraseScope`, erasureStatements.ts, bumps no version): an owner
 * still running when its scope is erased keeps its fence, and its writes still move the record
 * on. What they write of the user's data (`complete`/`fail`'s response body, `saveSteps`' steps)
 * is decided per column, in the same UPDATE, on the row it writes:
 *
 *   notErased    erased_at IS NULL
 *
 * An erasure E of the scope while the owner W runs:
 *
 *   W: claim (version v), runs the procedure
 *   E: UPDATE SET response_body, input_text, steps = NULL, erased_at
 *   W: saveSteps(v)    waits for E's row lock if E has not committed, then re-checks against E's
 *                      row: the fence holds, 1 row: the recovery point, irreversible_at and the
 *                      lease move on; steps stay NULL (notErased is false)
 *   W: complete(v)     1 row: COMPLETED, status, times and windows stored, response_body stays
 *                      NULL. W's own request gets its result; a replay gets 409
 *                      IDEMPOTENCY_REPLAY_UNAVAILABLE, as after an erasure of a completed record.
 *   W: release(v)      (instead of complete) after an external call's intent: irreversible_at
 *                      without steps. The next claim hands the record to an operator rather
 *                      than re-run the call blind (`erased_after_call`, the server's
 *                      executeExternal)
 *
 * Or W first:
 *
 *   W: complete(v)     1 row: COMPLETED with its body
 *   E: erases it       waits for W's row lock if W has not committed, then clears the body
 *
 * Either way the row ends erased. A `cancel` or an operator's `resolve` after the erasure is not
 * the owner's write (operatorStatements.ts): it stores its response (a cancel's is idem's own
 * error; an operator's, what the operator chose with the record in view), which the next
 * `eraseScope` clears.
 */

/** The fence of an owner's write, for the table aliased `r` (see the top of the file). */
export function stillOwned(fence: Fence): SQL {
  return sql`r.id = ${recordId(fence.id)}::bigint
    AND r.version = ${fence.version}::integer
    AND r.state = 'IN_PROGRESS'`;
}

/**
 * `value`, or NULL once the record (aliased `r`) was erased (`notErased`, see the top of the
 * file): the user's data an owner writes, so that an owner running through an erasure never
 * writes it back.
 */
export function unlessErased(value: SQL): SQL {
  return sql`CASE WHEN r.erased_at IS NULL THEN ${value} END`;
}

/**
 * The columns a stored outcome sets: the response to replay, when it completed, and how long it
 * is replayed and kept. `complete`, `fail`, an operator's `resolve` and `cancel` set these.
 * `body` is what `response_body` is set to: the response's body unless the caller guards it
 * (the owner's `finish` stores none on an erased record).
 */
export function storedOutcome(
  response: StoredResponse,
  clock: SQL,
  body: SQL = sql`${response.body}::text`,
): SQL {
  return sql`response_status = ${response.status}::integer,
    response_body = ${body},
    completed_at = ${clock},
    replay_expires_at = ${clock} + ${milliseconds(response.replayWindowMs)},
    purge_after = ${clock} + ${milliseconds(response.retentionMs)}`;
}

/**
 * Stores the owner's outcome (COMPLETED or TERMINAL_FAILURE) for replay and drops the lease; on
 * an erased record, without its body (`notErased`, see the top of the file). Returns the id when
 * the fence held.
 */
export function finish(
  state: 'COMPLETED' | 'TERMINAL_FAILURE',
  fence: Fence,
  response: StoredResponse,
  clock: SQL,
): SQL {
  return sql`UPDATE ${idemRecords} AS r
    SET state = ${state}::text,
      ${storedOutcome(response, clock, unlessErased(sql`${response.body}::text`))},
      lease_owner = NULL,
      lease_expires_at = NULL,
      updated_at = ${clock}
    WHERE ${stillOwned(fence)}
    RETURNING r.id::text AS id`;
}

/**
 * The cleanup time of a released key (aliased `r`): `retentionMs` from now, and never before its
 * `takeover_after`. A release keeps takeover_after (claimStatements.ts): the last owner's call may
 * be in flight until then. Reaped before it, the row and its recorded intent would be gone, and a
 * retry would insert a fresh record, with a new operation id nobody can look up, and call again.
 * (`greatest` ignores a NULL takeover_after.)
 */
export function releasedPurgeAfter(retentionMs: number, clock: SQL): SQL {
  return sql`purge_after = greatest(${clock} + ${milliseconds(retentionMs)}, r.takeover_after)`;
}

/**
 * Gives the key back for the next claim (a transient failure): RETRYABLE_FAILURE, no lease. The
 * steps and `irreversible_at` stay, so the next claim resumes without repeating a recorded
 * external call; the record may be deleted the procedure's `retentionMs` after the release if no
 * one claims it again. Retention, not the replay window: a released key has nothing to replay,
 * and a retry resumes it for as long as the row is kept, which idem's server makes at least the
 * replay window (`retentionMs >= replayWindowMs` is checked per procedure), measured from the
 * release rather than from the first request. Returns the id when the fence held.
 */
export function release(
  fence: Fence,
  windows: Pick<StoredResponse, 'retentionMs'>,
  clock: SQL,
): SQL {
  return sql`UPDATE ${idemRecords} AS r
    SET state = 'RETRYABLE_FAILURE',
      lease_owner = NULL,
      lease_expires_at = NULL,
      ${releasedPurgeAfter(windows.retentionMs, clock)},
      updated_at = ${clock}
    WHERE ${stillOwned(fence)}
    RETURNING r.id::text AS id`;
}
