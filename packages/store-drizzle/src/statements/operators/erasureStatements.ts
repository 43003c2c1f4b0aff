import { sql, type SQL } from 'drizzle-orm';
import { idemRecords } from '../../schema.js';

/**
 * Clears what a scope's records hold about the user (response body, input, steps) on live and
 * superseded rows, and stamps `erased_at`. Keeps the rest: the key hash, fingerprint, state and
 * operation id still de-duplicate a late retry, and the response status still answers it.
 *
 * Erasure changes no owner (no version bump): an owner still running keeps its fence and settles
 * the record, but writes no steps or response body back onto an erased row (`notErased`, with
 * the timeline, in completionStatements.ts).
 *
 * One UPDATE, unbounded: it locks every row of the scope until it commits (a retry of one of the
 * scope's keys waits that long). A row already erased with nothing to clear is not counted again;
 * one written to since (a cancel's or an operator's stored response) is erased again.
 * Live rows are found through `idem_records_live_key_unique`, superseded ones through
 * `idem_records_superseded_scope_idx`. Returns one row: `n`, how many rows it erased.
 */
export function eraseScope(scope: string, clock: SQL): SQL {
  return sql`WITH erased AS (
      UPDATE ${idemRecords} AS r
      SET response_body = NULL, input_text = NULL, steps = NULL, erased_at = ${clock}
      WHERE ((r.scope = ${scope}::text AND r.superseded_at IS NULL)
          OR (r.scope = ${scope}::text AND r.superseded_at IS NOT NULL))
        AND (
          r.erased_at IS NULL
          OR r.response_body IS NOT NULL
          OR r.input_text IS NOT NULL
          OR r.steps IS NOT NULL
        )
      RETURNING r.id
    )
    SELECT count(*)::integer AS n FROM erased`;
}
