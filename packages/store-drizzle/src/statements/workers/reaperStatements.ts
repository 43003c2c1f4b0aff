import type { StuckReport } from '@idem/contract';
import { sql, type SQL } from 'drizzle-orm';
import { milliseconds } from '../../drizzle/databaseClock.js';
import { recordProjection } from '../../drizzle/recordProjection.js';
import { idemRecords, REAPABLE } from '../../schema.js';

/*
 * The reaper's statements: deleting what is past its cleanup threshold, and counting what waits
 * for someone.
 *
 *   reapable  state IN ('COMPLETED', 'TERMINAL_FAILURE', 'RETRYABLE_FAILURE')
 *             AND purge_after <= clock
 *
 * A row in any other state is never deleted, however old: PENDING and IN_PROGRESS work may still
 * finish, and an unsettled record is the only trace of an external call whose outcome is unknown.
 * Superseded rows (always COMPLETED or TERMINAL_FAILURE) are reaped by the same rule.
 *
 * Two reapers A and B:
 *
 *   A: doomed: SELECT ... FOR UPDATE SKIP LOCKED       locks up to `limit` reapable rows
 *   B: doomed: the same SELECT                         skips A's rows, locks others, or none
 *   A: DELETE ... USING doomed; COMMIT                 B, when its snapshot still showed A's rows,
 *                                                      finds them gone on locking and skips them
 *   A claim racing the reaper on a released row: if the claim's takeover locked first, the row
 *   is IN_PROGRESS when the reaper re-checks it (kept); if the reaper locked first, the takeover
 *   finds no row and the claim inserts a fresh one.
 */

/** The reapable condition, for rows read through `alias`. */
function reapable(alias: string, clock: SQL): SQL {
  const c = (column: string) => sql.raw(`${alias}.${column}`);
  const states = sql.raw(REAPABLE.map((state) => `'${state}'`).join(', '));
  return sql`${c('state')} IN (${states}) AND ${c('purge_after')} <= ${clock}`;
}

/**
 * Deletes at most `limit` reapable rows, oldest cleanup time first, by primary key. Returns one
 * row: `n`, how many it deleted. `doomed` is MATERIALIZED for the reason given at
 * `takeOverAbandoned`; the DELETE re-checks the condition on the row it deletes. Ordered by
 * `purge_after` alone, so that a backlog is read in `idem_records_purge_idx` order and the scan
 * stops after `limit` rows instead of sorting the whole backlog.
 */
export function reap(limit: number, clock: SQL): SQL {
  return sql`WITH doomed AS MATERIALIZED (
      SELECT c.id FROM ${idemRecords} AS c
      WHERE ${reapable('c', clock)}
      ORDER BY c.purge_after
      LIMIT ${limit}::integer
      FOR UPDATE OF c SKIP LOCKED
    ),
    deleted AS (
      DELETE FROM ${idemRecords} AS r
      USING doomed
      WHERE r.id = doomed.id AND ${reapable('r', clock)}
      RETURNING r.id
    )
    SELECT count(*)::integer AS n FROM deleted`;
}

/** The classes of {@link StuckReport}, for rows read through `alias`. */
function stuckClasses(alias: string, clock: SQL, graceMs: number) {
  const c = (column: string) => sql.raw(`${alias}.${column}`);
  const graceAgo = sql`${clock} - ${milliseconds(graceMs)}`;
  return {
    abandoned: sql`${c('state')} = 'IN_PROGRESS' AND ${c('lease_expires_at')} <= ${graceAgo}`,
    // PENDING since its last change (the change that made it PENDING).
    pendingTooLong: sql`${c('state')} = 'PENDING' AND ${c('updated_at')} <= ${graceAgo}`,
    outcomeUnknown: sql`${c('state')} = 'OUTCOME_UNKNOWN'`,
    needsReconciliation: sql`${c('state')} = 'NEEDS_RECONCILIATION'`,
  } satisfies Record<keyof StuckReport, SQL>;
}

/**
 * Counts each class of {@link StuckReport} in one statement. One subquery per class, so that each
 * reads its own partial index (`idem_records_expired_lease_idx`, `idem_records_attention_idx`)
 * rather than the whole table.
 */
export function stuckReport(graceMs: number, clock: SQL): SQL {
  const classes = stuckClasses('s', clock, graceMs);
  const count = (condition: SQL) =>
    sql`(SELECT count(*) FROM ${idemRecords} AS s WHERE ${condition})::integer`;
  return sql`SELECT
    ${count(classes.abandoned)} AS abandoned,
    ${count(classes.pendingTooLong)} AS pending_too_long,
    ${count(classes.outcomeUnknown)} AS outcome_unknown,
    ${count(classes.needsReconciliation)} AS needs_reconciliation`;
}

/** A row of {@link stuckReport}. */
export interface StuckReportRow {
  abandoned: number;
  pending_too_long: number;
  outcome_unknown: number;
  needs_reconciliation: number;
}

/**
 * At most `limit` records of the classes of {@link stuckReport}, oldest first: by lease expiry for
 * IN_PROGRESS, by last change for the others.
 */
export function listStuck(graceMs: number, limit: number, clock: SQL): SQL {
  const classes = stuckClasses('s', clock, graceMs);
  return sql`SELECT ${recordProjection('s', clock)}
    FROM ${idemRecords} AS s
    WHERE (${classes.abandoned})
      OR (${classes.pendingTooLong})
      OR (${classes.outcomeUnknown})
      OR (${classes.needsReconciliation})
    ORDER BY CASE WHEN s.state = 'IN_PROGRESS' THEN s.lease_expires_at ELSE s.updated_at END,
      s.id
    LIMIT ${limit}::integer`;
}
