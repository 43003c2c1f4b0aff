import {
  DEFAULT_RETENTION_MS,
  type ClaimInput,
  type ClaimResult,
  type Fence,
  type IdempotencyRecord,
  type IdempotencyStore,
  type RecordState,
  type StoredResponse,
} from '@idem/contract';
import {
  and,
  eq,
  sql,
  type ExtractTablesWithRelations,
  type SQL,
  type TablesRelationalConfig,
} from 'drizzle-orm';
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from 'drizzle-orm/pg-core';
import { insertOrGetLive, selectLive, supersede, takeOver } from './claimStatements.js';
import { databaseClock, milliseconds } from './databaseClock.js';
import { executeRows, type StatementRunner } from './executeRows.js';
import { hasSqlState, LOCK_NOT_AVAILABLE } from './hasSqlState.js';
import { toIdempotencyRecord, type RecordRow } from './recordProjection.js';
import { idemRecords } from './schema.js';

/** Options of {@link DrizzleIdempotencyStore}. */
export interface DrizzleIdempotencyStoreOptions {
  /**
   * Milliseconds added to the database clock in every statement the store runs, so that a test
   * can move the store's "now" past a lease or a replay window without waiting. A second store
   * on the same database with a shifted clock plays a worker that arrives later.
   *
   * For tests only: in production it silently breaks every lease and window. Defaults to 0.
   */
  dangerouslyShiftClockMs?: number;
}

/**
 * How many times a claim goes back to its first statement after a takeover or supersede lost a
 * race (or a row vanished under it) before it answers with what it last read.
 */
const MAX_CLAIM_ROUNDS = 4;

/** A claim's first statement: the live row, and whether this statement inserted it. */
type ClaimRow = RecordRow & { inserted: boolean };

/** The largest `lock_timeout` PostgreSQL accepts, in milliseconds. */
const MAX_LOCK_TIMEOUT_MS = 2_147_483_647;

function assertMilliseconds(
  name: string,
  value: number,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): void {
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new RangeError(
      `${name} must be an integer number of milliseconds from ${min} to ${max}, got ${value}`,
    );
  }
}

/**
 * The idempotency key store on Drizzle's Postgres core: one implementation for every driver
 * (postgres.js, PGlite, node-postgres). `TTx` is the Drizzle transaction of `db`.
 *
 * Every method that takes `tx` runs only on `tx` (never the outer database: PGlite, which runs
 * one transaction at a time, would hang). Every instant is the database's (see `databaseClock`).
 *
 * Statements per call: a fresh claim and a replay (or any answer from the stored row) cost one;
 * a takeover two; a claim after the replay window closed three. `read`, `complete`, `fail` and
 * `release` cost one each.
 */
export class DrizzleIdempotencyStore<
  TQueryResult extends PgQueryResultHKT,
  TFullSchema extends Record<string, unknown> = Record<string, never>,
  TSchema extends TablesRelationalConfig = ExtractTablesWithRelations<TFullSchema>,
> implements IdempotencyStore<PgTransaction<TQueryResult, TFullSchema, TSchema>> {
  readonly #db: PgDatabase<TQueryResult, TFullSchema, TSchema>;
  readonly #clock: SQL;

  constructor(
    db: PgDatabase<TQueryResult, TFullSchema, TSchema>,
    options: DrizzleIdempotencyStoreOptions = {},
  ) {
    this.#db = db;
    this.#clock = databaseClock(options.dangerouslyShiftClockMs ?? 0);
  }

  transaction<T>(
    fn: (tx: PgTransaction<TQueryResult, TFullSchema, TSchema>) => Promise<T>,
  ): Promise<T> {
    return this.#db.transaction(fn);
  }

  /**
   * Claims a key (see `claimStatements.ts` for the races). With `lockTimeoutMs`, a claim that
   * waits longer than that behind another transaction's uncommitted claim is `busy`; PostgreSQL
   * has then aborted the surrounding transaction, which the caller must roll back.
   */
  async claim(
    input: ClaimInput,
    tx?: PgTransaction<TQueryResult, TFullSchema, TSchema>,
  ): Promise<ClaimResult> {
    assertMilliseconds('leaseMs', input.leaseMs, 1);
    if (input.lockTimeoutMs !== undefined) {
      assertMilliseconds('lockTimeoutMs', input.lockTimeoutMs, 1, MAX_LOCK_TIMEOUT_MS);
    }
    const runner = this.#runner(tx);
    const clock = this.#clock;
    try {
      for (let round = 1; round <= MAX_CLAIM_ROUNDS; round++) {
        const row = await this.#insertOrGetLive(runner, input);
        if (row === undefined) continue; // the row vanished under us (superseded or reaped)
        if (row.inserted) {
          return { kind: 'claimed', record: toIdempotencyRecord(row), takeover: false };
        }
        const lastRound = round === MAX_CLAIM_ROUNDS;
        const sameRequest = row.fingerprint === input.fingerprint;
        const released = row.state === 'RETRYABLE_FAILURE';
        const leaseRanOut = row.state === 'IN_PROGRESS' && row.lease_expired;
        const replayWindowClosed = isReplayable(row.state) && row.replay_expired;
        if (!lastRound && sameRequest && (released || leaseRanOut)) {
          const [taken] = await executeRows<RecordRow>(runner, takeOver(row, input, clock));
          // No row, or a row of nulls (with a lock timeout): another claimer got there first.
          if (taken?.id != null) {
            return { kind: 'claimed', record: toIdempotencyRecord(taken), takeover: true };
          }
        } else if (!lastRound && replayWindowClosed) {
          await executeRows(runner, supersede(row, input.lockTimeoutMs, clock));
        } else {
          return { kind: 'existing', record: toIdempotencyRecord(row) };
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
  async #insertOrGetLive(runner: StatementRunner, input: ClaimInput) {
    const [row] = await executeRows<ClaimRow>(runner, insertOrGetLive(input, this.#clock));
    if (row?.id != null) return row;
    const [live] = await executeRows<RecordRow>(runner, selectLive(input, this.#clock));
    return live === undefined ? undefined : { ...live, inserted: false };
  }

  async read(
    key: { scope: string; procedure: string; keyHash: string },
    tx?: PgTransaction<TQueryResult, TFullSchema, TSchema>,
  ): Promise<IdempotencyRecord | null> {
    const [row] = await executeRows<RecordRow>(this.#runner(tx), selectLive(key, this.#clock));
    return row === undefined ? null : toIdempotencyRecord(row);
  }

  complete(
    fence: Fence,
    response: StoredResponse,
    tx?: PgTransaction<TQueryResult, TFullSchema, TSchema>,
  ): Promise<boolean> {
    return this.#finish('COMPLETED', fence, response, tx);
  }

  fail(
    fence: Fence,
    response: StoredResponse,
    tx?: PgTransaction<TQueryResult, TFullSchema, TSchema>,
  ): Promise<boolean> {
    return this.#finish('TERMINAL_FAILURE', fence, response, tx);
  }

  /**
   * Releases the key for the next claim. The record may be deleted `DEFAULT_RETENTION_MS` after
   * the release if no one claims it again.
   */
  async release(
    fence: Fence,
    tx?: PgTransaction<TQueryResult, TFullSchema, TSchema>,
  ): Promise<boolean> {
    const clock = this.#clock;
    const rows = await this.#runner(tx)
      .update(idemRecords)
      .set({
        state: 'RETRYABLE_FAILURE',
        leaseOwner: null,
        leaseExpiresAt: null,
        purgeAfter: sql`${clock} + ${milliseconds(DEFAULT_RETENTION_MS)}`,
        updatedAt: clock,
      })
      .where(stillOwned(fence))
      .returning({ id: idemRecords.id });
    return rows.length > 0;
  }

  /**
   * Stores an outcome for replay, fenced: only the owner of `fence.version`, while the record is
   * still IN_PROGRESS, writes. A worker whose lease was taken over matches no row (the takeover
   * bumped the version) and gets `false`.
   */
  async #finish(
    state: 'COMPLETED' | 'TERMINAL_FAILURE',
    fence: Fence,
    response: StoredResponse,
    tx: PgTransaction<TQueryResult, TFullSchema, TSchema> | undefined,
  ): Promise<boolean> {
    assertMilliseconds('replayWindowMs', response.replayWindowMs, 0);
    assertMilliseconds('retentionMs', response.retentionMs, 0);
    const clock = this.#clock;
    const rows = await this.#runner(tx)
      .update(idemRecords)
      .set({
        state,
        responseStatus: response.status,
        responseBody: response.body,
        completedAt: clock,
        replayExpiresAt: sql`${clock} + ${milliseconds(response.replayWindowMs)}`,
        purgeAfter: sql`${clock} + ${milliseconds(response.retentionMs)}`,
        leaseOwner: null,
        leaseExpiresAt: null,
        updatedAt: clock,
      })
      .where(stillOwned(fence))
      .returning({ id: idemRecords.id });
    return rows.length > 0;
  }

  #runner(tx: PgTransaction<TQueryResult, TFullSchema, TSchema> | undefined) {
    return tx ?? this.#db;
  }
}

function isReplayable(state: RecordState): boolean {
  return state === 'COMPLETED' || state === 'TERMINAL_FAILURE';
}

/** The fence of every owner's write: the same record, the same version, still in progress. */
function stillOwned(fence: Fence): SQL | undefined {
  return and(
    eq(idemRecords.id, BigInt(fence.id)),
    eq(idemRecords.version, fence.version),
    eq(idemRecords.state, 'IN_PROGRESS'),
  );
}
