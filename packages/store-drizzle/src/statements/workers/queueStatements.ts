import { sql, type SQL } from 'drizzle-orm';
import { milliseconds } from '../../drizzle/databaseClock.js';
import { recordProjection } from '../../drizzle/recordProjection.js';
import { idemRecords } from '../../schema.js';

/*
 * The statements of queued work (`respond: 'accepted'` with a queue). A claim stores the fresh
 * row PENDING, without a lease (claimStatements.ts); a worker takes it:
 *
 *   queued       state = 'PENDING' AND superseded_at IS NULL
 *
 * Two workers A and B (in one process or two) on the same queue:
 *
 *   A: picked: SELECT ... WHERE queued ORDER BY created_at, id LIMIT n FOR UPDATE SKIP LOCKED
 *   B: the same SELECT                  skips every row A holds (no wait) and locks others, or none
 *   A: UPDATE ... FROM picked WHERE queued   IN_PROGRESS, version v + 1, owner A, a lease; COMMIT
 *   B, when its snapshot predates A's commit: the row is unlocked now; B locks it and re-checks
 *      `queued` against A's committed row (IN_PROGRESS): not taken.
 *
 * A cancel C of a queued row (operatorStatements.ts) against a worker A:
 *
 *   C: target ... FOR UPDATE; UPDATE: TERMINAL_FAILURE, version v + 1; COMMIT
 *   A: picked skips it while C holds it; afterwards it is not `queued`: never taken, never run.
 *   or A first: A's UPDATE commits IN_PROGRESS at v + 1; C's fence (version v) matches nothing,
 *   C reads again and cancels the running work by the rules of running work.
 */

/** What `takePending` asks for. */
export interface TakePendingOptions {
  owner: string;
  leaseMs: number;
  limit: number;
  procedures: readonly string[];
}

function queued(alias: string): SQL {
  const c = (column: string) => sql.raw(`${alias}.${column}`);
  return sql`${c('state')} = 'PENDING' AND ${c('superseded_at')} IS NULL`;
}

/** Takes at most `limit` queued records of `procedures`, oldest first, for `owner`. */
export function takePending(options: TakePendingOptions, clock: SQL): SQL {
  return sql`WITH picked AS MATERIALIZED (
      SELECT c.id FROM ${idemRecords} AS c
      WHERE ${queued('c')} AND c.procedure = ANY(${sql.param([...options.procedures])}::text[])
      ORDER BY c.created_at, c.id
      LIMIT ${options.limit}::integer
      FOR UPDATE OF c SKIP LOCKED
    ),
    taken AS (
      UPDATE ${idemRecords} AS r
      SET state = 'IN_PROGRESS', version = r.version + 1, lease_owner = ${options.owner}::text,
        lease_expires_at = ${clock} + ${milliseconds(options.leaseMs)}, updated_at = ${clock}
      FROM picked
      WHERE r.id = picked.id AND ${queued('r')}
      RETURNING r.*
    )
    SELECT ${recordProjection('taken', clock)} FROM taken ORDER BY taken.created_at, taken.id`;
}

/** How many records of `procedures` are queued. */
export function countPending(procedures: readonly string[]): SQL {
  return sql`SELECT count(*)::integer AS pending FROM ${idemRecords} AS c
    WHERE ${queued('c')} AND c.procedure = ANY(${sql.param([...procedures])}::text[])`;
}
