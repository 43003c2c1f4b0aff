import {
  RECONCILIATION_REASONS,
  type AuditEntry,
  type ReconciliationReason,
  type ClaimInput,
  type ClaimResult,
  type Fence,
  type KeyAnswer,
  type OutcomeRecord,
  type RecordedAtCommit,
  type RecoveryRecord,
  type RecoveryStore,
  type Resolution,
  type StoredResponse,
  type StuckReport,
} from '@idem/contract';
import type { ExtractTablesWithRelations, SQL, TablesRelationalConfig } from 'drizzle-orm';
import type { PgDatabase, PgQueryResultHKT, PgTransaction } from 'drizzle-orm/pg-core';
import {
  assertLimit,
  assertMaxTakeovers,
  assertMilliseconds,
  assertWindows,
} from './drizzle/assertMilliseconds.js';
import { claimKey, MAX_LOCK_TIMEOUT_MS } from './statements/request/claimKey.js';
import * as completion from './statements/request/completionStatements.js';
import {
  outcomeUnlessLiveTemplate,
  readAnswerTemplate,
  readLiveTemplate,
  recordOutcomeTemplate,
} from './statements/request/commitStatements.js';
import { databaseClock } from './drizzle/databaseClock.js';
import {
  drizzleRunner,
  executeRows,
  rowsOf,
  templateRows,
  type DrizzleRunner,
  type StatementRunner,
  type StatementRunnerFactory,
} from './drizzle/executeRows.js';
import { hasSqlState, LOCK_NOT_AVAILABLE, violates } from './drizzle/hasSqlState.js';
import { LIVE_KEY_INDEX } from './schema.js';
import * as audit from './statements/operators/auditRows.js';
import * as erasure from './statements/operators/erasureStatements.js';
import * as lookup from './statements/request/operationLookup.js';
import * as operator from './statements/operators/operatorStatements.js';
import * as queue from './statements/workers/queueStatements.js';
import * as reaper from './statements/workers/reaperStatements.js';
import { toRecoveryRecord, type RecordRow } from './drizzle/recordProjection.js';
import * as recovery from './statements/request/recoveryStatements.js';

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
   * `createPostgresJsStore` gives its prepared-statement runner here. Defaults to `db.execute()`
   * (on `db`, or on the transaction).
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
 * written beside it: `claimStatements.ts`, `recoveryStatements.ts`, `reaperStatements.ts`,
 * `operatorStatements.ts`, `completionStatements.ts`, `erasureStatements.ts`.
 */
export class DrizzleIdempotencyStore<
  TQueryResult extends PgQueryResultHKT,
  TFullSchema extends Record<string, unknown> = Record<string, never>,
  TSchema extends TablesRelationalConfig = ExtractTablesWithRelations<TFullSchema>,
> implements RecoveryStore<PgTransaction<TQueryResult, TFullSchema, TSchema>> {
  readonly #db: PgDatabase<TQueryResult, TFullSchema, TSchema>;
  readonly #clock: SQL;
  readonly #runner: StatementRunnerFactory;
  /** The hot path's statements, rendered once (commitStatements.ts). */
  readonly #templates: {
    readLive: ReturnType<typeof readLiveTemplate>;
    readAnswer: ReturnType<typeof readAnswerTemplate>;
    recordOutcome: ReturnType<typeof recordOutcomeTemplate>;
    outcomeUnlessLive: ReturnType<typeof outcomeUnlessLiveTemplate>;
  };

  constructor(
    db: PgDatabase<TQueryResult, TFullSchema, TSchema>,
    options: DrizzleIdempotencyStoreOptions = {},
  ) {
    this.#db = db;
    this.#clock = databaseClock(options.dangerouslyShiftClockMs ?? 0);
    this.#runner = options.statementRunner ?? drizzleRunner;
    this.#templates = {
      readLive: readLiveTemplate(this.#clock),
      readAnswer: readAnswerTemplate(this.#clock),
      recordOutcome: recordOutcomeTemplate(this.#clock),
      outcomeUnlessLive: outcomeUnlessLiveTemplate(this.#clock),
    };
  }

  transaction<T>(
    fn: (tx: PgTransaction<TQueryResult, TFullSchema, TSchema>) => Promise<T>,
  ): Promise<T> {
    return this.#db.transaction(fn);
  }

  /**
   * Claims a key (see `claimKey.ts`, and `claimStatements.ts` for the races). With
   * `lockTimeoutMs`, a claim that waits longer than that behind another transaction's uncommitted
   * claim is `busy`; PostgreSQL has then aborted the surrounding transaction, which the caller
   * must roll back.
   */
  async claim(
    input: ClaimInput,
    tx?: PgTransaction<TQueryResult, TFullSchema, TSchema>,
  ): Promise<ClaimResult> {
    return claimKey(this.#statements(tx), input, this.#clock);
  }

  async read(
    key: { scope: string; procedure: string; keyHash: string },
    tx?: PgTransaction<TQueryResult, TFullSchema, TSchema>,
  ): Promise<RecoveryRecord | null> {
    const [row] = await templateRows<RecordRow>(this.#statements(tx), this.#templates.readLive, {
      scope: key.scope,
      procedure: key.procedure,
      keyHash: key.keyHash,
    });
    return row === undefined ? null : toRecoveryRecord(row);
  }

  /** What the key's live row answers with (commitStatements.ts), outside any transaction. */
  async readAnswer(key: {
    scope: string;
    procedure: string;
    keyHash: string;
  }): Promise<KeyAnswer | null> {
    const [row] = await templateRows<AnswerRow>(this.#statements(), this.#templates.readAnswer, {
      scope: key.scope,
      procedure: key.procedure,
      keyHash: key.keyHash,
    });
    if (row === undefined) return null;
    return {
      state: row.state,
      fingerprint: row.fingerprint,
      fingerprintVersion: row.fingerprint_version,
      operationId: row.operation_id,
      responseStatus: row.response_status,
      responseBody: row.response_body,
      replayExpired: row.replay_expired,
    };
  }

  /**
   * Runs `work` and records its outcome as the transaction's last statement (see
   * `commitStatements.ts` for the race). Where the driver pipelines, the record goes out with
   * the COMMIT; a record that fails makes PostgreSQL answer that COMMIT by rolling back, and
   * its error, read after the transaction, says which of `taken` and `busy` it was.
   */
  async commitWithRecord<T>(
    work: (
      tx: PgTransaction<TQueryResult, TFullSchema, TSchema>,
    ) => Promise<{ value: T; record: OutcomeRecord }>,
  ): Promise<RecordedAtCommit<T>> {
    let recorded: Promise<unknown> | undefined;
    let value: T;
    try {
      value = await this.#db.transaction(async (tx) => {
        const done = await work(tx);
        const runner = this.#statements(tx);
        const values = outcomeValues(done.record);
        if (runner.sendLast) {
          recorded = runner.sendLast(this.#templates.recordOutcome, values);
        } else {
          recorded = runner.run(this.#templates.recordOutcome, values);
          await recorded;
        }
        return done.value;
      });
      await recorded;
    } catch (error) {
      // Only the record's own failure is a verdict on the key (the work's errors are the work's),
      // and a record that failed means the transaction did not commit, whatever else failed.
      const failure = recorded === undefined ? undefined : await rejectionOf(recorded);
      if (failure !== undefined && violates(failure, LIVE_KEY_INDEX)) return { kind: 'taken' };
      if (failure !== undefined && hasSqlState(failure, LOCK_NOT_AVAILABLE)) {
        return { kind: 'busy' };
      }
      throw error;
    }
    return { kind: 'recorded', value };
  }

  /** A fresh key's outcome in a statement of its own, unless the key has a live row. */
  async insertOutcome(record: OutcomeRecord): Promise<boolean> {
    assertWindows(record.response);
    const result = await this.#statements().run(
      this.#templates.outcomeUnlessLive,
      outcomeValues(record),
    );
    return rowsOf(result).length > 0;
  }

  /** The same as `read`: every record the store hands out carries its recovery fields. */
  async readRecovery(
    key: { scope: string; procedure: string; keyHash: string },
    tx?: PgTransaction<TQueryResult, TFullSchema, TSchema>,
  ): Promise<RecoveryRecord | null> {
    return this.read(key, tx);
  }

  /** A malformed operation id (not a uuid) finds no record, without asking the database. */
  async findByOperationId(
    operationId: string,
    tx?: PgTransaction<TQueryResult, TFullSchema, TSchema>,
  ): Promise<RecoveryRecord | null> {
    if (!lookup.isOperationId(operationId)) return null;
    const statement = lookup.selectByOperationId(operationId, this.#clock);
    const [row] = await executeRows<RecordRow>(this.#statements(tx), statement);
    return row === undefined ? null : toRecoveryRecord(row);
  }

  /** Stores the outcome for replay, fenced (see `completionStatements.ts` for the race). */
  async complete(
    fence: Fence,
    response: StoredResponse,
    tx?: PgTransaction<TQueryResult, TFullSchema, TSchema>,
  ): Promise<boolean> {
    assertWindows(response);
    return this.#written(completion.finish('COMPLETED', fence, response, this.#clock), tx);
  }

  /** Stores a deterministic failure for replay, fenced like `complete`. */
  async fail(
    fence: Fence,
    response: StoredResponse,
    tx?: PgTransaction<TQueryResult, TFullSchema, TSchema>,
  ): Promise<boolean> {
    assertWindows(response);
    return this.#written(completion.finish('TERMINAL_FAILURE', fence, response, this.#clock), tx);
  }

  /**
   * Releases the key for the next claim, fenced like `complete`. The record may be deleted
   * `windows.retentionMs` after the release if no one claims it again.
   */
  async release(
    fence: Fence,
    windows: Pick<StoredResponse, 'retentionMs'>,
    tx?: PgTransaction<TQueryResult, TFullSchema, TSchema>,
  ): Promise<boolean> {
    assertMilliseconds('retentionMs', windows.retentionMs, 0);
    return this.#written(completion.release(fence, windows, this.#clock), tx);
  }

  async saveSteps(
    fence: Fence,
    update: recovery.StepsUpdate,
    tx?: PgTransaction<TQueryResult, TFullSchema, TSchema>,
  ): Promise<boolean> {
    assertMilliseconds('leaseMs', update.leaseMs, 1);
    if (update.callTimeLimitMs !== undefined) {
      assertMilliseconds('callTimeLimitMs', update.callTimeLimitMs, 1);
    }
    return this.#written(recovery.saveSteps(fence, update, this.#clock), tx);
  }

  async extendLease(fence: Fence, leaseMs: number): Promise<boolean> {
    assertMilliseconds('leaseMs', leaseMs, 1);
    return this.#written(recovery.extendLease(fence, leaseMs, this.#clock));
  }

  async markUnsettled(
    fence: Fence,
    state: 'OUTCOME_UNKNOWN' | 'NEEDS_RECONCILIATION',
    reason?: ReconciliationReason,
  ): Promise<boolean> {
    if (!recovery.UNSETTLED.includes(state)) {
      throw new TypeError(
        `markUnsettled moves to ${recovery.UNSETTLED.join(' or ')}, got ${state}`,
      );
    }
    if (reason !== undefined && !Object.hasOwn(RECONCILIATION_REASONS, reason)) {
      throw new TypeError(`markUnsettled: unknown reconciliation reason ${reason}`);
    }
    return this.#written(recovery.markUnsettled(fence, state, reason ?? null, this.#clock));
  }

  /** No procedures, no records (and no statement). */
  async takeOverAbandoned(options: recovery.TakeOverOptions): Promise<RecoveryRecord[]> {
    assertMilliseconds('leaseMs', options.leaseMs, 1);
    assertLimit('limit', options.limit);
    if (options.maxTakeovers !== undefined) assertMaxTakeovers(options.maxTakeovers);
    if (options.procedures.length === 0) return [];
    const statement = recovery.takeOverAbandoned(options, this.#clock);
    return (await executeRows<RecordRow>(this.#statements(), statement)).map(toRecoveryRecord);
  }

  async takePending(options: queue.TakePendingOptions): Promise<RecoveryRecord[]> {
    assertMilliseconds('leaseMs', options.leaseMs, 1);
    assertLimit('limit', options.limit);
    if (options.procedures.length === 0) return [];
    const statement = queue.takePending(options, this.#clock);
    return (await executeRows<RecordRow>(this.#statements(), statement)).map(toRecoveryRecord);
  }

  async countPending(procedures: readonly string[]): Promise<number> {
    if (procedures.length === 0) return 0;
    const [row] = await executeRows<{ pending: number }>(
      this.#statements(),
      queue.countPending(procedures),
    );
    return Number(row?.pending ?? 0);
  }

  async cancel(
    fence: Fence,
    response: StoredResponse,
  ): Promise<'cancelled' | 'irreversible' | 'stale'> {
    assertWindows(response);
    const statement = operator.cancel(fence, response, this.#clock);
    const [row] = await executeRows<{ outcome: 'cancelled' | 'irreversible' | 'stale' }>(
      this.#statements(),
      statement,
    );
    return row!.outcome;
  }

  async reap(options: { limit: number }): Promise<number> {
    assertLimit('limit', options.limit);
    return this.#count(reaper.reap(options.limit, this.#clock));
  }

  async stuckReport(options: { graceMs: number }): Promise<StuckReport> {
    assertMilliseconds('graceMs', options.graceMs, 0);
    const statement = reaper.stuckReport(options.graceMs, this.#clock);
    const [row] = await executeRows<reaper.StuckReportRow>(this.#statements(), statement);
    return {
      abandoned: row!.abandoned,
      pendingTooLong: row!.pending_too_long,
      outcomeUnknown: row!.outcome_unknown,
      needsReconciliation: row!.needs_reconciliation,
    };
  }

  async listStuck(options: { graceMs: number; limit: number }): Promise<RecoveryRecord[]> {
    assertMilliseconds('graceMs', options.graceMs, 0);
    assertLimit('limit', options.limit);
    const statement = reaper.listStuck(options.graceMs, options.limit, this.#clock);
    return (await executeRows<RecordRow>(this.#statements(), statement)).map(toRecoveryRecord);
  }

  /**
   * Throws a TypeError for a resolution the state machine does not admit, a RangeError for
   * windows that are not whole milliseconds (`assertResolution`).
   */
  async resolve(fence: Fence, resolution: Resolution): Promise<boolean> {
    operator.assertResolution(resolution);
    return (await this.#count(operator.resolve(fence, resolution, this.#clock))) > 0;
  }

  async listAudit(recordId: string): Promise<AuditEntry[]> {
    const rows = await executeRows<audit.AuditRow>(this.#statements(), audit.selectAudit(recordId));
    return rows.map(audit.toAuditEntry);
  }

  async eraseScope(scope: string): Promise<number> {
    return this.#count(erasure.eraseScope(scope, this.#clock));
  }

  /** Runs a fenced write returning the id it wrote: whether the fence held. */
  async #written(
    statement: SQL,
    tx?: PgTransaction<TQueryResult, TFullSchema, TSchema>,
  ): Promise<boolean> {
    return (await executeRows(this.#statements(tx), statement)).length > 0;
  }

  /** Runs a statement returning one row `n`. */
  async #count(statement: SQL): Promise<number> {
    const [row] = await executeRows<{ n: number }>(this.#statements(), statement);
    return row!.n;
  }

  /** Where raw statements run: on `tx`, or on the database, through the driver's runner. */
  #statements(tx?: PgTransaction<TQueryResult, TFullSchema, TSchema>): StatementRunner {
    return this.#runner((tx ?? this.#db) as unknown as DrizzleRunner, tx !== undefined);
  }
}

/** The values of an outcome row's statements (commitStatements.ts). */
function outcomeValues(record: OutcomeRecord): Record<string, unknown> {
  assertWindows(record.response);
  assertMilliseconds('lockTimeoutMs', record.lockTimeoutMs, 1, MAX_LOCK_TIMEOUT_MS);
  return {
    scope: record.scope,
    procedure: record.procedure,
    keyHash: record.keyHash,
    fingerprint: record.fingerprint,
    fingerprintVersion: record.fingerprintVersion,
    operationId: record.operationId,
    state: record.state,
    status: record.response.status,
    body: record.response.body,
    replayWindowMs: record.response.replayWindowMs,
    retentionMs: record.response.retentionMs,
    lockTimeout: `${record.lockTimeoutMs}ms`,
  };
}

/** What `promise` rejected with, or undefined when it resolved. */
async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
    return undefined;
  } catch (rejection) {
    return rejection ?? new Error('rejected without a reason');
  }
}

/** A row of the readAnswer statement. */
type AnswerRow = Pick<
  RecordRow,
  | 'state'
  | 'fingerprint'
  | 'fingerprint_version'
  | 'operation_id'
  | 'response_status'
  | 'response_body'
  | 'replay_expired'
>;
