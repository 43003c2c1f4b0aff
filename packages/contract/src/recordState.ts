import { z } from 'zod';

/**
 * States of an idempotency record.
 *
 * - `PENDING`: reserved, not yet owned by a worker (queued long-running work).
 * - `IN_PROGRESS`: owned by a worker holding a lease; phases may have committed.
 * - `COMPLETED`: finished; the stored response is replayed.
 * - `RETRYABLE_FAILURE`: released after a transient failure; the next request runs again.
 * - `TERMINAL_FAILURE`: a deterministic failure; the stored error is replayed like a success.
 * - `OUTCOME_UNKNOWN`: an external call may or may not have happened; it is looked up by
 *   `operation_id` before anything runs again, never guessed.
 * - `NEEDS_RECONCILIATION`: no lookup could settle the outcome; an operator must resolve it.
 */
export const recordStateSchema = z.enum([
  'PENDING',
  'IN_PROGRESS',
  'COMPLETED',
  'RETRYABLE_FAILURE',
  'TERMINAL_FAILURE',
  'OUTCOME_UNKNOWN',
  'NEEDS_RECONCILIATION',
]);
export type RecordState = z.infer<typeof recordStateSchema>;

/** States whose stored response is replayed to a duplicate. */
export const REPLAYABLE_STATES = [
  'COMPLETED',
  'TERMINAL_FAILURE',
] as const satisfies readonly RecordState[];

/** States the reaper may delete once past the cleanup threshold. */
export const REAPABLE_STATES = [
  'COMPLETED',
  'TERMINAL_FAILURE',
  'RETRYABLE_FAILURE',
] as const satisfies readonly RecordState[];
