import type { AuditEntry } from '@idem/contract';
import { sql, type SQL } from 'drizzle-orm';
import { recordId } from '../../drizzle/assertMilliseconds.js';
import { idemAudit } from '../../schema.js';

/* The audit trail operators read: rows written by `resolve` (operatorStatements.ts), mapped. */

/** The audit rows of a record, oldest first. */
export function selectAudit(id: string): SQL {
  return sql`SELECT a.id::text AS id,
      a.record_id::text AS record_id,
      a.operation_id::text AS operation_id,
      a.actor, a.action, a.from_state, a.to_state, a.from_version, a.note,
      (extract(epoch from a.at) * 1000)::float8 AS at
    FROM ${idemAudit} AS a
    WHERE a.record_id = ${recordId(id)}::bigint
    ORDER BY a.id`;
}

/** A row of {@link selectAudit}. */
export interface AuditRow {
  id: string;
  record_id: string;
  operation_id: string;
  actor: string;
  action: string;
  from_state: string;
  to_state: string;
  from_version: number;
  note: string;
  at: number;
}

export function toAuditEntry(row: AuditRow): AuditEntry {
  return {
    id: row.id,
    recordId: row.record_id,
    operationId: row.operation_id,
    actor: row.actor,
    action: row.action,
    fromState: row.from_state,
    toState: row.to_state,
    fromVersion: row.from_version,
    note: row.note,
    at: new Date(Math.floor(row.at)),
  };
}
