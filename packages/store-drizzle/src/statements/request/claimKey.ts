import type { ClaimInput, ClaimResult, RecordState } from '@idem/contract';
import type { SQL } from 'drizzle-orm';
import { assertMaxTakeovers, assertMilliseconds } from '../../drizzle/assertMilliseconds.js';
import { insertOrGetLive, selectLive, supersede, takeOver } from './claimStatements.js';
import { executeRows, type StatementRunner } from '../../drizzle/executeRows.js';
import { hasSqlState, LOCK_NOT_AVAILABLE } from '../../drizzle/hasSqlState.js';
import { isOperationId } from './operationLookup.js';
import { toRecoveryRecord, type RecordRow } from '../../drizzle/recordProjection.js';

/**
 * How many times a claim goes back to its first statement after a takeover or supersede lost a
 * race (or a row vanished under it) before it answers with what it last read.
 */
const MAX_CLAIM_ROUNDS = 4;

/** A claim's first statement: the live row, and whether this statement inserted it. */
type ClaimRow = RecordRow & { inserted: boolean };

/** The largest `lock_timeout` PostgreSQL accepts, in milliseconds. */
export const MAX_LOCK_TIMEOUT_MS = 2_147_483_647;

/**
 * Claims a key on `runner` (see `claimStatements.ts` for the statements and their races): the
 * application only chooses which statement to try next from what the last one returned.
 *
 * A same-request claim takes over a released key, an expired lease and an unknown outcome; it
 * never takes over NEEDS_RECONCILIATION or PENDING. With `lockTimeoutMs`, a lock wait that runs
 * out is `busy`.
 */
export async function claimKey(
  runner: StatementRunner,
  input: ClaimInput,
  clock: SQL,
): Promise<ClaimResult> {
  assertMilliseconds('leaseMs', input.leaseMs, 1);
  if (input.maxTakeovers !== undefined) assertMaxTakeovers(input.maxTakeovers);
  if (input.lockTimeoutMs !== undefined) {
    assertMilliseconds('lockTimeoutMs', input.lockTimeoutMs, 1, MAX_LOCK_TIMEOUT_MS);
  }
  if (input.operationId !== undefined && !isOperationId(input.operationId)) {
    throw new TypeError(
      `operationId must be a UUID (e.g. from crypto.randomUUID()), got ${JSON.stringify(input.operationId)}`,
    );
  }
  try {
    for (let round = 1; round <= MAX_CLAIM_ROUNDS; round++) {
      const row = await insertOrGetLiveRow(runner, input, clock);
      if (row === undefined) continue; // the row vanished under us (superseded or reaped)
      if (row.inserted) {
        return { kind: 'claimed', record: toRecoveryRecord(row), takeover: false };
      }
      const lastRound = round === MAX_CLAIM_ROUNDS;
      const sameRequest = row.fingerprint === input.fingerprint;
      const released = row.state === 'RETRYABLE_FAILURE';
      const callSettled = !row.takeover_blocked;
      const leaseRanOut = row.state === 'IN_PROGRESS' && row.lease_expired && callSettled;
      const outcomeUnknown = row.state === 'OUTCOME_UNKNOWN';
      const replayWindowClosed = isReplayable(row.state) && row.replay_expired;
      if (sameRequest && (outcomeUnknown || released) && !callSettled) {
        // The last owner's call may still be in flight (an unknown outcome, or a key released,
        // by its owner or an operator, after an intent): a lookup now could miss it. takeOver
        // refuses it too; answering here spares its rounds, and an accepted procedure's 202 for
        // work nobody runs.
        return { kind: 'busy' };
      }
      if (!lastRound && sameRequest && (released || leaseRanOut || outcomeUnknown)) {
        const [taken] = await executeRows<RecordRow>(runner, takeOver(row, input, clock));
        // No row, or a row of nulls (with a lock timeout): another claimer got there first.
        if (taken?.id != null) {
          const record = toRecoveryRecord(taken);
          return record.state === 'IN_PROGRESS'
            ? { kind: 'claimed', record, takeover: true }
            : { kind: 'existing', record, reconciled: 'takeover_limit' };
        }
      } else if (!lastRound && replayWindowClosed) {
        await executeRows(runner, supersede(row, input.lockTimeoutMs, clock));
      } else {
        return { kind: 'existing', record: toRecoveryRecord(row) };
      }
    }
  } catch (error) {
    if (hasSqlState(error, LOCK_NOT_AVAILABLE)) return { kind: 'busy' };
    throw error;
  }
  // Only when live rows kept vanishing between two statements: answer as if still contended.
  return { kind: 'busy' };
}

/**
 * Step 1 of a claim, plus a read on a fresh snapshot when it returned no record (it waited for
 * a concurrent claim that committed). A plain SELECT rather than another round: it neither
 * spends a round nor burns an identity value on a doomed INSERT.
 */
async function insertOrGetLiveRow(runner: StatementRunner, input: ClaimInput, clock: SQL) {
  const [row] = await executeRows<ClaimRow>(runner, insertOrGetLive(input, clock));
  if (row?.id != null) return row;
  const [live] = await executeRows<RecordRow>(runner, selectLive(input, clock));
  return live === undefined ? undefined : { ...live, inserted: false };
}

function isReplayable(state: RecordState): boolean {
  return state === 'COMPLETED' || state === 'TERMINAL_FAILURE';
}
