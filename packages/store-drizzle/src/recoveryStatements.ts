import type { Fence } from '@idem/contract';
import { sql, type SQL } from 'drizzle-orm';
import { recordId } from './assertMilliseconds.js';
import { milliseconds } from './databaseClock.js';
import { recordProjection } from './recordProjection.js';
import { idemRecords } from './schema.js';

/*
 * The statements of phased (external-mode) work and of the completer. Every write is fenced:
 *
 *   stillOwned  id = the owner's record AND version = the owner's version AND state = 'IN_PROGRESS'
 *   abandoned   superseded_at IS NULL AND (
 *                 (state = 'IN_PROGRESS' AND lease_expires_at <= clock)  -- the worker is gone
 *                 OR state = 'OUTCOME_UNKNOWN')                          -- a lookup is owed
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
 */

/** The fence of an owner's write, for the table aliased `r`. */
function stillOwned(fence: Fence): SQL {
  return sql`r.id = ${recordId(fence.id)}::bigint
    AND r.version = ${fence.version}::integer
    AND r.state = 'IN_PROGRESS'`;
}

/** What the completer may take over, for rows read through `alias` (see the top of the file). */
function abandoned(alias: string, clock: SQL): SQL {
  const c = (column: string) => sql.raw(`${alias}.${column}`);
  return sql`${c('superseded_at')} IS NULL
    AND (
      (${c('state')} = 'IN_PROGRESS' AND ${c('lease_expires_at')} <= ${clock})
      OR ${c('state')} = 'OUTCOME_UNKNOWN'
    )`;
}

/** What `saveSteps` writes. */
export interface StepsUpdate {
  steps: string;
  recoveryPoint: string | null;
  leaseMs: number;
  irreversible?: boolean;
}

/**
 * Commits the owner's steps and recovery point and extends its lease to `leaseMs` from now.
 * `irreversible` stamps `irreversible_at` once (a later stamp keeps the first instant). Returns
 * the id when the fence held.
 */
export function saveSteps(fence: Fence, update: StepsUpdate, clock: SQL): SQL {
  const irreversibleAt =
    update.irreversible === true
      ? sql`coalesce(r.irreversible_at, ${clock})`
      : sql`r.irreversible_at`;
  return sql`UPDATE ${idemRecords} AS r
    SET steps = ${update.steps}::text,
      recovery_point = ${update.recoveryPoint}::text,
      irreversible_at = ${irreversibleAt},
      lease_expires_at = ${clock} + ${milliseconds(update.leaseMs)},
      updated_at = ${clock}
    WHERE ${stillOwned(fence)}
    RETURNING r.id::text AS id`;
}

/** Heartbeat: the owner's lease ends `leaseMs` from now. Returns the id when the fence held. */
export function extendLease(fence: Fence, leaseMs: number, clock: SQL): SQL {
  return sql`UPDATE ${idemRecords} AS r
    SET lease_expires_at = ${clock} + ${milliseconds(leaseMs)}, updated_at = ${clock}
    WHERE ${stillOwned(fence)}
    RETURNING r.id::text AS id`;
}

/** The states `markUnsettled` moves to. */
export const UNSETTLED = ['OUTCOME_UNKNOWN', 'NEEDS_RECONCILIATION'] as const;

/**
 * Moves the owner's record to an unsettled state and drops the lease. No cleanup time: the reaper
 * never deletes an unsettled record, whatever its age. Returns the id when the fence held.
 */
export function markUnsettled(fence: Fence, state: (typeof UNSETTLED)[number], clock: SQL): SQL {
  return sql`UPDATE ${idemRecords} AS r
    SET state = ${state}::text,
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
}

/**
 * The completer's takeover, one statement: picks at most `limit` abandoned records of
 * `procedures`, oldest first (by lease expiry for IN_PROGRESS, by last change for
 * OUTCOME_UNKNOWN), and hands each to `owner` with a fresh lease, `version` and `attempts` bumped.
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
      SET state = 'IN_PROGRESS',
        version = r.version + 1,
        attempts = r.attempts + 1,
        lease_owner = ${options.owner}::text,
        lease_expires_at = ${clock} + ${milliseconds(options.leaseMs)},
        purge_after = NULL,
        updated_at = ${clock}
      FROM picked
      WHERE r.id = picked.id AND ${abandoned('r', clock)}
      RETURNING r.*, picked.since
    )
    SELECT ${recordProjection('taken', clock)} FROM taken ORDER BY taken.since, taken.id`;
}
