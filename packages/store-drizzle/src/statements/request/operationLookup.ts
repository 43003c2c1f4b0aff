import { sql, type SQL } from 'drizzle-orm';
import { recordProjection } from '../../drizzle/recordProjection.js';
import { idemRecords } from '../../schema.js';

/*
 * The request path's lookup by operation id (a caller's status and cancel, the operator's
 * tools): a read, so no race to decide; a malformed id never reaches the database.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether `operationId` can be one (a uuid): anything else finds no record. */
export function isOperationId(operationId: string): boolean {
  return UUID.test(operationId);
}

/** A record by operation id, live or superseded. */
export function selectByOperationId(operationId: string, clock: SQL): SQL {
  return sql`SELECT ${recordProjection('o', clock)}
    FROM ${idemRecords} AS o
    WHERE o.operation_id = ${operationId}::uuid`;
}
