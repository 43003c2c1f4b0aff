import { DEFAULT_RETENTION_MS, type Fence, type StoredResponse } from '@idem/contract';
import { sql, type SQL } from 'drizzle-orm';
import { recordId } from './assertMilliseconds.js';
import { milliseconds } from './databaseClock.js';
import { idemRecords } from './schema.js';

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
 */

/** The fence of an owner's write, for the table aliased `r` (see the top of the file). */
export function stillOwned(fence: Fence): SQL {
  return sql`r.id = ${recordId(fence.id)}::bigint
    AND r.version = ${fence.version}::integer
    AND r.state = 'IN_PROGRESS'`;
}

/**
 * The columns a stored outcome sets: the response to replay, when it completed, and how long it
 * is replayed and kept. `complete`, `fail`, an operator's `resolve` and `cancel` set these.
 */
export function storedOutcome(response: StoredResponse, clock: SQL): SQL {
  return sql`response_status = ${response.status}::integer,
    response_body = ${response.body}::text,
    completed_at = ${clock},
    replay_expires_at = ${clock} + ${milliseconds(response.replayWindowMs)},
    purge_after = ${clock} + ${milliseconds(response.retentionMs)}`;
}

/**
 * Stores the owner's outcome (COMPLETED or TERMINAL_FAILURE) for replay and drops the lease.
 * Returns the id when the fence held.
 */
export function finish(
  state: 'COMPLETED' | 'TERMINAL_FAILURE',
  fence: Fence,
  response: StoredResponse,
  clock: SQL,
): SQL {
  return sql`UPDATE ${idemRecords} AS r
    SET state = ${state}::text,
      ${storedOutcome(response, clock)},
      lease_owner = NULL,
      lease_expires_at = NULL,
      updated_at = ${clock}
    WHERE ${stillOwned(fence)}
    RETURNING r.id::text AS id`;
}

/**
 * Gives the key back for the next claim (a transient failure): RETRYABLE_FAILURE, no lease, and
 * the record may be deleted `DEFAULT_RETENTION_MS` later if no one claims it again. Returns the
 * id when the fence held.
 */
export function release(fence: Fence, clock: SQL): SQL {
  return sql`UPDATE ${idemRecords} AS r
    SET state = 'RETRYABLE_FAILURE',
      lease_owner = NULL,
      lease_expires_at = NULL,
      purge_after = ${clock} + ${milliseconds(DEFAULT_RETENTION_MS)},
      updated_at = ${clock}
    WHERE ${stillOwned(fence)}
    RETURNING r.id::text AS id`;
}
