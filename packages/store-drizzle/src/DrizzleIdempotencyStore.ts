import type {
  AuditEntry,
  ClaimInput,
  ClaimResult,
  Fence,
  KeyAnswer,
  OutcomeRecord,
  ReconciliationReason,
  RecordedAtCommit,
  RecoveryRecord,
  RecoveryStore,
  Resolution,
  StoredResponse,
  StuckReport,
} from '@idem/contract';
import type { ExtractTablesWithRelations, TablesRelationalConfig } from 'drizzle-orm';
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from 'drizzle-orm/pg-core';
import { databaseClock } from './drizzle/databaseClock.js';
import { drizzleRunner, type StatementRunnerFactory } from './drizzle/executeRows.js';
import type { StepsUpdate, TakeOverOptions } from './statements/request/recoveryStatements.js';
import type { TakePendingOptions } from './statements/workers/queueStatements.js';
import { OperatorCalls } from './store/OperatorCalls.js';
import { RequestCalls } from './store/RequestCalls.js';
import { StoreParts } from './store/StoreParts.js';
import { WorkerCalls } from './store/WorkerCalls.js';

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
  /**
   * How the store runs its raw statements (see `StatementRunnerFactory`): for driver adapters,
   * `createPostgresJsStore` gives its prepared-statement runner here, `createNodePostgresStore`
   * its bounded one. Defaults to `db.execute()` (on `db`, or on the transaction).
   */
  statementRunner?: StatementRunnerFactory;
}

/**
 * The idempotency key store on Drizzle's Postgres core, with the recovery side of phased work,
 * background workers and operators: one implementation for every driver (postgres.js, PGlite,
 * node-postgres). `TTx` is the Drizzle transaction of `db`. Every record it hands out, `claim`'s
 * included, is a `RecoveryRecord`.
 *
 * Every method that takes `tx` runs only on `tx` (never the outer database: PGlite, which runs
 * one transaction at a time, would hang). Every instant is the database's (see `databaseClock`).
 *
 * Statements per call: a fresh claim and a replay (or any answer from the stored row) cost one;
 * a takeover two; a claim after the replay window closed three. Every other method costs one
 * (`resolve` writes its audit row in the same statement). The races each statement decides are
 * written beside it, in `statements/` by who runs it: `request/` (claimStatements.ts,
 * commitStatements.ts, completionStatements.ts, recoveryStatements.ts), `workers/`
 * (reaperStatements.ts) and `operators/` (operatorStatements.ts, erasureStatements.ts). The
 * methods' bodies are in `store/`, by caller: RequestCalls.ts, WorkerCalls.ts, OperatorCalls.ts.
 */
export class DrizzleIdempotencyStore<
  TQueryResult extends PgQueryResultHKT,
  TFullSchema extends Record<string, unknown> = Record<string, never>,
  TSchema extends TablesRelationalConfig = ExtractTablesWithRelations<TFullSchema>,
> implements RecoveryStore<PgTransaction<TQueryResult, TFullSchema, TSchema>> {
  readonly #request: RequestCalls<PgTransaction<TQueryResult, TFullSchema, TSchema>>;
  readonly #workers: WorkerCalls<PgTransaction<TQueryResult, TFullSchema, TSchema>>;
  readonly #operators: OperatorCalls<PgTransaction<TQueryResult, TFullSchema, TSchema>>;

  constructor(
    db: PgDatabase<TQueryResult, TFullSchema, TSchema>,
    options: DrizzleIdempotencyStoreOptions = {},
  ) {
    const parts = new StoreParts(
      db,
      databaseClock(options.dangerouslyShiftClockMs ?? 0),
      options.statementRunner ?? drizzleRunner,
    );
    this.#request = new RequestCalls(parts);
    this.#workers = new WorkerCalls(parts);
    this.#operators = new OperatorCalls(parts);
  }

  // The request path (store/RequestCalls.ts).

  transaction<T>(
    fn: (tx: PgTransaction<TQueryResult, TFullSchema, TSchema>) => Promise<T>,
  ): Promise<T> {
    return this.#request.transaction(fn);
  }

  /**
   * Claims a key (see `claimKey.ts`, and `claimStatements.ts` for the races). With
   * `lockTimeoutMs`, a claim that waits longer than that behind another transaction's uncommitted
   * claim is `busy`; PostgreSQL has then aborted the surrounding transaction, which the caller
   * must roll back.
   */
  claim(
    input: ClaimInput,
    tx?: PgTransaction<TQueryResult, TFullSchema, TSchema>,
  ): Promise<ClaimResult> {
    return this.#request.claim(input, tx);
  }

  read(
    key: { scope: string; procedure: string; keyHash: string },
    tx?: PgTransaction<TQueryResult, TFullSchema, TSchema>,
  ): Promise<RecoveryRecord | null> {
    return this.#request.read(key, tx);
  }

  /** What the key's live row answers with (commitStatements.ts), outside any transaction. */
  readAnswer(key: {
    scope: string;
    procedure: string;
    keyHash: string;
  }): Promise<KeyAnswer | null> {
    return this.#request.readAnswer(key);
  }

  /**
   * Runs `work` and records its outcome as the transaction's last statement (see
   * `commitStatements.ts` for the race). Where the driver pipelines, the record goes out with
   * the COMMIT; a record that fails makes PostgreSQL answer that COMMIT by rolling back, and
   * its error, read after the transaction, says which of `taken` and `busy` it was.
   */
  commitWithRecord<T>(
    work: (
      tx: PgTransaction<TQueryResult, TFullSchema, TSchema>,
    ) => Promise<{ value: T; record: OutcomeRecord }>,
  ): Promise<RecordedAtCommit<T>> {
    return this.#request.commitWithRecord(work);
  }

  /** A fresh key's outcome in a statement of its own, unless the key has a live row. */
  insertOutcome(record: OutcomeRecord): Promise<boolean> {
    return this.#request.insertOutcome(record);
  }

  /** Stores the outcome for replay, fenced (see `completionStatements.ts` for the race). */
  complete(
    fence: Fence,
    response: StoredResponse,
    tx?: PgTransaction<TQueryResult, TFullSchema, TSchema>,
  ): Promise<boolean> {
    return this.#request.complete(fence, response, tx);
  }

  /** Stores a deterministic failure for replay, fenced like `complete`. */
  fail(
    fence: Fence,
    response: StoredResponse,
    tx?: PgTransaction<TQueryResult, TFullSchema, TSchema>,
  ): Promise<boolean> {
    return this.#request.fail(fence, response, tx);
  }

  /**
   * Releases the key for the next claim, fenced like `complete`. The record may be deleted
   * `windows.retentionMs` after the release if no one claims it again.
   */
  release(
    fence: Fence,
    windows: Pick<StoredResponse, 'retentionMs'>,
    tx?: PgTransaction<TQueryResult, TFullSchema, TSchema>,
  ): Promise<boolean> {
    return this.#request.release(fence, windows, tx);
  }

  saveSteps(
    fence: Fence,
    update: StepsUpdate,
    tx?: PgTransaction<TQueryResult, TFullSchema, TSchema>,
  ): Promise<boolean> {
    return this.#request.saveSteps(fence, update, tx);
  }

  // Background workers and long work's owner (store/WorkerCalls.ts).

  /** No procedures, no records (and no statement). */
  takeOverAbandoned(options: TakeOverOptions): Promise<RecoveryRecord[]> {
    return this.#workers.takeOverAbandoned(options);
  }

  takePending(options: TakePendingOptions): Promise<RecoveryRecord[]> {
    return this.#workers.takePending(options);
  }

  countPending(procedures: readonly string[]): Promise<number> {
    return this.#workers.countPending(procedures);
  }

  extendLease(fence: Fence, leaseMs: number): Promise<boolean> {
    return this.#workers.extendLease(fence, leaseMs);
  }

  markUnsettled(
    fence: Fence,
    state: 'OUTCOME_UNKNOWN' | 'NEEDS_RECONCILIATION',
    reason?: ReconciliationReason,
  ): Promise<boolean> {
    return this.#workers.markUnsettled(fence, state, reason);
  }

  reap(options: { limit: number }): Promise<number> {
    return this.#workers.reap(options);
  }

  // Operators (store/OperatorCalls.ts).

  /** The same as `read`: every record the store hands out carries its recovery fields. */
  readRecovery(
    key: { scope: string; procedure: string; keyHash: string },
    tx?: PgTransaction<TQueryResult, TFullSchema, TSchema>,
  ): Promise<RecoveryRecord | null> {
    return this.read(key, tx);
  }

  /** A malformed operation id (not a uuid) finds no record, without asking the database. */
  findByOperationId(
    operationId: string,
    tx?: PgTransaction<TQueryResult, TFullSchema, TSchema>,
  ): Promise<RecoveryRecord | null> {
    return this.#operators.findByOperationId(operationId, tx);
  }

  stuckReport(options: { graceMs: number }): Promise<StuckReport> {
    return this.#operators.stuckReport(options);
  }

  listStuck(options: { graceMs: number; limit: number }): Promise<RecoveryRecord[]> {
    return this.#operators.listStuck(options);
  }

  cancel(fence: Fence, response: StoredResponse): Promise<'cancelled' | 'irreversible' | 'stale'> {
    return this.#operators.cancel(fence, response);
  }

  /**
   * Throws a TypeError for a resolution the state machine does not admit, a RangeError for
   * windows that are not whole milliseconds (`assertResolution`).
   */
  resolve(fence: Fence, resolution: Resolution): Promise<boolean> {
    return this.#operators.resolve(fence, resolution);
  }

  listAudit(recordId: string): Promise<AuditEntry[]> {
    return this.#operators.listAudit(recordId);
  }

  eraseScope(scope: string): Promise<number> {
    return this.#operators.eraseScope(scope);
  }
}
