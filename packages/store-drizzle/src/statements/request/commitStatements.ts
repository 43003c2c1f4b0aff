import { sql, type Placeholder, type SQL } from 'drizzle-orm';
import { recordProjection } from '../../drizzle/recordProjection.js';
import { idemRecords } from '../../schema.js';
import { statementTemplate } from '../../drizzle/statementTemplate.js';

/*
 * The statements of a local-mode request that takes its key at commit (`claim: 'at-commit'`),
 * rendered once per store (statementTemplate.ts). Three statements, each deciding one thing:
 *
 *   readAnswer      what the key's live row answers with, outside any transaction: a replay is
 *                   this one statement (not on a first attempt: see the server's executeAtCommit)
 *   recordOutcome   the work's outcome as a fresh row, the LAST statement of the work's
 *                   transaction, sent together with COMMIT: no round trip of its own
 *   outcomeUnlessLive   a stored failure after the work rolled back, in a statement of its own
 *
 * The arbiter is the partial unique index on (scope, procedure, key_hash) WHERE superseded_at IS
 * NULL, as for every claim. recordOutcome has no ON CONFLICT: a live row for the key makes it
 * FAIL (23505), and a failed statement aborts the transaction, so the COMMIT sent behind it
 * rolls back; the work's writes never commit without their record, nor a record without them.
 *
 * Two racers A and B, same key, nothing stored yet (READ COMMITTED):
 *
 *   A: readLive -> no row          B: readLive -> no row
 *   A: BEGIN, the handler's writes, recordOutcome (uncommitted entry in the unique index), COMMIT
 *   B: BEGIN, the handler's writes, recordOutcome -> waits on A's index entry, for at most
 *      lockTimeoutMs (lock_timeout, set in the same statement; nothing runs after it but COMMIT):
 *        A commits first     -> B's INSERT fails 23505, B's transaction rolls back (its handler's
 *                               writes with it); B reads the key and replays A's row: `taken`
 *        A rolls back first  -> B's INSERT goes ahead: B's outcome is the key's
 *        the wait runs out   -> 55P03, B rolls back: `busy`, 409 in progress
 *
 * Both handlers may run; one transaction commits. A request that reads the key after A
 * committed replays without running anything. The handler runs again after a crash, as with a
 * first claim: nothing of a transaction that did not commit remains.
 *
 * A live row of any other kind (a claim-first or external record in progress, a released key, a
 * replay window that has closed) is not this module's: the server answers it through the claim
 * statements (claimStatements.ts), which decide takeovers and supersedes.
 */

/**
 * What the key's live row answers with (`KeyAnswer`), read on its own snapshot: the columns a
 * replay needs and nothing else (a replay is this statement; every column costs the driver).
 */
export function readAnswerTemplate(clock: SQL) {
  return statementTemplate(
    'readAnswer',
    ['scope', 'procedure', 'keyHash'],
    (p) => sql`SELECT live.state AS state,
        live.fingerprint AS fingerprint,
        live.fingerprint_version AS fingerprint_version,
        live.operation_id::text AS operation_id,
        live.response_status AS response_status,
        live.response_body AS response_body,
        coalesce(live.replay_expires_at <= ${clock}, false) AS replay_expired
      FROM ${idemRecords} AS live
      WHERE live.scope = ${p.scope}::text
        AND live.procedure = ${p.procedure}::text
        AND live.key_hash = ${p.keyHash}::text
        AND live.superseded_at IS NULL`,
    { readOnly: true },
  );
}

/** The live row of a key, read on its own snapshot (the projection of every record read). */
export function readLiveTemplate(clock: SQL) {
  return statementTemplate(
    'readLive',
    ['scope', 'procedure', 'keyHash'],
    (p) => sql`SELECT ${recordProjection('live', clock)}
      FROM ${idemRecords} AS live
      WHERE live.scope = ${p.scope}::text
        AND live.procedure = ${p.procedure}::text
        AND live.key_hash = ${p.keyHash}::text
        AND live.superseded_at IS NULL`,
    { readOnly: true },
  );
}

const OUTCOME_VALUES = [
  'scope',
  'procedure',
  'keyHash',
  'fingerprint',
  'fingerprintVersion',
  'operationId',
  'state',
  'status',
  'body',
  'replayWindowMs',
  'retentionMs',
  'lockTimeout',
] as const;

/** The values of a fresh outcome row, for the INSERT's SELECT list. */
function outcomeRow(v: Record<(typeof OUTCOME_VALUES)[number], Placeholder>, clock: SQL) {
  return sql`${v.scope}::text, ${v.procedure}::text, ${v.keyHash}::text, ${v.fingerprint}::text,
    ${v.fingerprintVersion}::integer, ${v.state}::text, 1, 1, ${v.operationId}::uuid,
    ${v.status}::integer, ${v.body}::text, ${clock}, ${clock}, ${clock},
    ${clock} + (${v.replayWindowMs}::float8 * interval '1 millisecond'),
    ${clock} + (${v.retentionMs}::float8 * interval '1 millisecond')`;
}

const OUTCOME_COLUMNS = sql.raw(`scope, procedure, key_hash, fingerprint, fingerprint_version,
    state, version, attempts, operation_id, response_status, response_body,
    created_at, updated_at, completed_at, replay_expires_at, purge_after`);

/**
 * INSERTs a fresh outcome row, `tail` after it. `lock_timeout` is set for the rest of the
 * transaction by the statement itself, before its INSERT waits on the unique index: at commit
 * only COMMIT follows, and on its own the statement is its own transaction, so nothing else is
 * bounded by it.
 */
function insertOutcome(
  p: Record<(typeof OUTCOME_VALUES)[number], Placeholder>,
  clock: SQL,
  tail: SQL,
) {
  return sql`WITH bound AS MATERIALIZED (
      SELECT set_config('lock_timeout', ${p.lockTimeout}::text, true) AS lock_timeout
    )
    INSERT INTO ${idemRecords} (${OUTCOME_COLUMNS})
    SELECT ${outcomeRow(p, clock)} FROM bound
    ${tail}`;
}

/**
 * The work's outcome as the key's fresh live row (see the timeline above): no ON CONFLICT, a live
 * row for the key makes it fail. Returns no rows: its success is the answer.
 */
export function recordOutcomeTemplate(clock: SQL) {
  return statementTemplate('recordOutcome', OUTCOME_VALUES, (p) => insertOutcome(p, clock, sql``));
}

/**
 * A fresh outcome row unless the key has a live one (then nothing, and no row returned): a
 * stored failure after its work rolled back, in a statement (and transaction) of its own.
 */
export function outcomeUnlessLiveTemplate(clock: SQL) {
  return statementTemplate('outcomeUnlessLive', OUTCOME_VALUES, (p) =>
    insertOutcome(
      p,
      clock,
      sql`ON CONFLICT (scope, procedure, key_hash) WHERE superseded_at IS NULL DO NOTHING
        RETURNING id::text AS id`,
    ),
  );
}
