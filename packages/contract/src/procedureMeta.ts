import { z } from 'zod';

/**
 * Which failures a procedure stores and replays.
 *
 * - `deterministic` (default): 4xx-class failures other than 408, 409, 425, 429 and 499 are
 *   stored and replayed like a success; transient failures (5xx, timeouts, store errors) release the key.
 * - `none`: no failure is stored; every failure releases the key and the next retry runs again.
 */
export const failurePolicySchema = z.enum(['deterministic', 'none']);
export type FailurePolicy = z.infer<typeof failurePolicySchema>;

/**
 * How a procedure runs.
 *
 * - `local`: the handler only writes to the key store's database. Claim, the handler's writes
 *   (through `ctx.idem.tx`) and completion commit in one transaction.
 * - `external`: the handler has side effects outside the database. The claim commits first, the
 *   work runs outside any transaction, and completion is conditioned on the record's version.
 */
export const executionModeSchema = z.enum(['local', 'external']);
export type ExecutionMode = z.infer<typeof executionModeSchema>;

/**
 * When a local-mode request takes its key.
 *
 * - `at-commit` (local mode's default): the handler runs first; the record, carrying the
 *   response, is the transaction's last INSERT, sent together with COMMIT. The unique index
 *   arbitrates racers: of two concurrent duplicates both may run their handler, one commits,
 *   the other's transaction rolls back (its writes vanish) and it replays the winner. A replay
 *   is one statement, a fresh request one statement more than without idem.
 * - `first`: the key is claimed by the transaction's first statement, before the handler; a
 *   concurrent duplicate waits for it at most `lockTimeoutMs`, then answers 409 in progress, and
 *   its handler never runs. Two statements more per fresh request. Choose it for handlers that
 *   are expensive, or that take contended locks a doomed duplicate should not hold.
 *
 * External mode always claims first (its claim commits before the work).
 */
export const claimTimingSchema = z.enum(['at-commit', 'first']);
export type ClaimTiming = z.infer<typeof claimTimingSchema>;

/** Options of one idempotent procedure. Every field is optional; defaults in brackets. */
export const idempotencyOptionsSchema = z.object({
  /** How the procedure runs. [`local`] */
  mode: executionModeSchema.optional(),
  /** Milliseconds a completed result is replayed. [86 400 000: 24 h] */
  replayWindowMs: z.number().int().positive().optional(),
  /** Milliseconds after completion before the record is deleted. [259 200 000: 72 h] */
  retentionMs: z.number().int().positive().optional(),
  /** Milliseconds a worker owns an in-progress key without extending it. [30 000] */
  leaseMs: z.number().int().positive().optional(),
  /** Milliseconds a local-mode duplicate waits behind an uncommitted claim. [2 000] */
  lockTimeoutMs: z.number().int().positive().optional(),
  /**
   * When a local-mode request takes its key: `at-commit` or `first` (see `claimTimingSchema`).
   * External mode claims first; `at-commit` there is a start-up error. [`at-commit` in local mode]
   */
  claim: claimTimingSchema.optional(),
  /** Which failures are stored and replayed. [`deterministic`] */
  failures: failurePolicySchema.optional(),
  /**
   * `accepted`: long-running work (external mode only). The first request answers 202 at once
   * with `{ operationId, state }` and the work goes on in the background; every duplicate gets
   * the same operation, never a second job. Poll the result by operation id. [`result`]
   */
  respond: z.enum(['result', 'accepted']).optional(),
  /**
   * What is stored for replay: the whole output, a reference to re-read, an encrypted or redacted
   * secret, or nothing. The server's options carry the functions; meta records the kind. [`full`]
   */
  replay: z.enum(['full', 'reference', 'encrypted', 'redacted', 'none']).optional(),
  /**
   * Added to the caller scope, to separate environments (`live`, `test`) or tenants further.
   * The caller scope itself always comes from the authenticated context. [none]
   */
  scopeSuffix: z.string().min(1).max(64).optional(),
});
export type IdempotencyOptions = z.infer<typeof idempotencyOptionsSchema>;

/** Marks a mutation as deliberately not idempotent: clients must never retry it once sent. */
export const retryUnsafeSchema = z.object({
  /** Why the mutation cannot take a key; shown by the router audit. */
  reason: z.string().min(1),
});
export type RetryUnsafe = z.infer<typeof retryUnsafeSchema>;

/**
 * Marks a mutation safe to retry by nature, with no key: running it twice leaves the same state
 * as running it once (a delete by id, setting a field to a given value). Never an insert.
 */
export const retrySafeSchema = z.object({
  /** Why a second run changes nothing; shown by the router audit. */
  reason: z.string().min(1),
});
export type RetrySafe = z.infer<typeof retrySafeSchema>;

/**
 * The procedure meta idem reads. Add it to your root meta type:
 * `initTRPC.meta<IdemMeta>()`, or intersect it with your own.
 */
export interface IdemMeta {
  /** Set by idem's procedure builder; declares the procedure idempotent. */
  idempotency?: IdempotencyOptions;
  /** Declares a mutation deliberately retry-unsafe, so the router audit accepts it. */
  retryUnsafe?: RetryUnsafe;
  /** Declares a mutation safe to retry by nature (no key), so the router audit accepts it. */
  retrySafe?: RetrySafe;
}
