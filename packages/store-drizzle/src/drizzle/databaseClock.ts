import { sql, type SQL } from 'drizzle-orm';

/**
 * Milliseconds as an SQL interval. `ms` is sent as a parameter, never spliced into the text.
 */
export function milliseconds(ms: number): SQL {
  return sql`(${ms}::float8 * interval '1 millisecond')`;
}

/**
 * The database clock every statement of the store reads: `statement_timestamp()`, shifted by
 * `shiftMs` (0 outside tests).
 *
 * Why `statement_timestamp()`: it is the database's clock, fresh for every statement (unlike
 * `now()`, which is frozen at the start of the transaction, so a claim and its completion in one
 * local-mode transaction would share one instant), and one instant for the whole statement
 * (unlike `clock_timestamp()`, which moves between two reads in one statement, so `created_at`
 * and `updated_at` of a fresh claim, or `completed_at` and `replay_expires_at - window`, would
 * differ by microseconds). The instant is taken when the statement starts, before any lock wait:
 * a lease granted after a wait is shorter by the wait, and an expiry check after a wait is made
 * against the earlier instant; both err on the safe side.
 */
export function databaseClock(shiftMs: number): SQL {
  if (!Number.isFinite(shiftMs)) {
    throw new RangeError(`dangerouslyShiftClockMs must be a finite number, got ${shiftMs}`);
  }
  return shiftMs === 0
    ? sql`statement_timestamp()`
    : sql`(statement_timestamp() + ${milliseconds(shiftMs)})`;
}
