import { createHash, randomUUID } from 'node:crypto';
import {
  DEFAULT_REPLAY_WINDOW_MS,
  DEFAULT_RETENTION_MS,
  type ClaimInput,
  type ClaimResult,
  type IdempotencyRecord,
  type OutcomeRecord,
  type RecordState,
  type RecoveryRecord,
  type RecoveryStore,
  type StoredResponse,
} from '@idem/contract';
import { sql, type SQL } from 'drizzle-orm';
import type { DrizzleIdempotencyStoreOptions } from '../src/index.js';

/** What a conformance suite needs from a driver: stores and raw reads on one migrated database. */
export interface ConformanceTarget<TTx> {
  /**
   * A store on the suite's database (a new Drizzle instance on the same client), optionally with
   * a shifted clock, and a `logQuery` hook that sees every statement the store runs.
   */
  createStore(
    options?: DrizzleIdempotencyStoreOptions & { logQuery?: (query: string) => void },
  ): RecoveryStore<TTx>;
  /** Runs `query` on the database, or on `tx`, and returns its rows. */
  rows<T>(query: SQL, tx?: TTx): Promise<T[]>;
}

/** A SHA-256 hex key hash no other test uses. */
export function freshKeyHash(): string {
  return createHash('sha256').update(randomUUID()).digest('hex');
}

/** A claim of a fresh key; each test overrides what it is about. */
export function claimInput(overrides: Partial<ClaimInput> = {}): ClaimInput {
  return {
    scope: 'acct_1:live',
    procedure: 'orders.create',
    keyHash: freshKeyHash(),
    fingerprint: 'fingerprint-a',
    fingerprintVersion: 1,
    leaseMs: 30_000,
    owner: 'worker-a',
    ...overrides,
  };
}

/** A fresh key's COMPLETED outcome record (`commitWithRecord`, `insertOutcome`). */
export function outcomeRecord(overrides: Partial<OutcomeRecord> = {}): OutcomeRecord {
  return {
    scope: 'acct_1:commit',
    procedure: 'orders.create',
    keyHash: freshKeyHash(),
    fingerprint: 'fingerprint-a',
    fingerprintVersion: 1,
    operationId: randomUUID(),
    state: 'COMPLETED',
    response: storedResponse(),
    lockTimeoutMs: 2_000,
    ...overrides,
  };
}

/** Key order deliberately unsorted, and characters outside ASCII: replays must be byte-exact. */
export const UNSORTED_UNICODE_BODY =
  '{"b":1,"a":2,"text":"héllo — ✓ 日本語 🎉","nested":{"z":[3,1],"y":null}}';

export function storedResponse(overrides: Partial<StoredResponse> = {}): StoredResponse {
  return {
    status: 200,
    body: UNSORTED_UNICODE_BODY,
    replayWindowMs: DEFAULT_REPLAY_WINDOW_MS,
    retentionMs: DEFAULT_RETENTION_MS,
    ...overrides,
  };
}

/** The windows a release takes: the procedure's retention (the contract's default unless given). */
export function releaseWindows(
  retentionMs = DEFAULT_RETENTION_MS,
): Pick<StoredResponse, 'retentionMs'> {
  return { retentionMs };
}

/**
 * The record of a `claimed` result; fails the test on any other kind. Typed as the
 * `RecoveryRecord` the store hands out (the tests check the recovery fields are there).
 */
export function claimedRecord(result: ClaimResult): RecoveryRecord & { takeover: boolean } {
  if (result.kind !== 'claimed') throw new Error(`expected claimed, got ${result.kind}`);
  return { ...(result.record as RecoveryRecord), takeover: result.takeover };
}

/** The record of an `existing` result; fails the test on any other kind. */
export function existingRecord(result: ClaimResult): RecoveryRecord {
  if (result.kind !== 'existing') throw new Error(`expected existing, got ${result.kind}`);
  return result.record as RecoveryRecord;
}

/** A record without the fields computed at read time, to compare two reads of one row. */
export function stored(record: IdempotencyRecord | null) {
  if (record === null) return null;
  const {
    leaseExpired: _expired,
    leaseRemainingMs: _remaining,
    replayExpired: _replayExpired,
    ...rest
  } = record;
  return rest;
}

/** Thrown inside a transaction to roll it back on purpose. */
export class Rollback extends Error {
  constructor() {
    super('rolled back on purpose');
  }
}

interface KeyRow {
  id: string;
  superseded: boolean;
  attempts: number;
  state: string;
}

/** Shorthands over a target, read when a test runs (after the caller's `beforeAll`). */
export function conformanceHelpers<TTx>(target: () => ConformanceTarget<TTx>) {
  return {
    /** A store on the suite's database, on the database's own clock. */
    store: () => target().createStore(),
    /** A store whose clock runs `shiftMs` ahead: a worker arriving that much later. */
    laterStore: (shiftMs: number) => target().createStore({ dangerouslyShiftClockMs: shiftMs }),
    /** Every row of a key, superseded ones included, oldest first. */
    rowsOfKey: (keyHash: string) =>
      target().rows<KeyRow>(sql`
        SELECT id::text AS id, superseded_at IS NOT NULL AS superseded, attempts, state
        FROM idem_records WHERE key_hash = ${keyHash} ORDER BY id`),
    /**
     * Puts a record in a state no store method reaches from where the test is (PENDING, a
     * superseded IN_PROGRESS row, a very old cleanup time), by a raw UPDATE.
     */
    force: (id: string, set: { state?: RecordState; superseded?: boolean; purgeAfter?: string }) =>
      target().rows(sql`
        UPDATE idem_records SET
          state = coalesce(${set.state ?? null}::text, state),
          superseded_at = CASE WHEN ${set.superseded ?? false}::boolean THEN now()
            ELSE superseded_at END,
          purge_after = coalesce(${set.purgeAfter ?? null}::timestamptz, purge_after)
        WHERE id = ${id}::bigint`),
    /** How many rows of `ids` are still in the table. */
    surviving: async (ids: readonly string[]) => {
      const [row] = await target().rows<{ n: number }>(sql`
        SELECT count(*)::int AS n FROM idem_records WHERE id::text = ANY(${sql.param([...ids])}::text[])`);
      return row!.n;
    },
  };
}
