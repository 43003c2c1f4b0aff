import { ProcedureWindowRegistry } from '../../src/request/procedureWindows.js';
import { answerRefusal } from '../../src/executors/answerRefusal.js';
/**
 * A small in-memory key store for unit tests of the server's decision modules: the whole
 * `RecoveryStore` contract (claims, replays, commits, fences and takeovers, steps, the workers'
 * and operators' calls) decided in milliseconds, on a clock of its own that `later(ms)` shifts
 * (as `dangerouslyShiftClockMs` shifts a real store's), with knobs for the answers a database
 * gives under races (`busyNext`, `commitNext`) and outages (`failNext`). It runs the store
 * contract's cases (`storeContractCases` of `@idem/fixtures`, memoryStore.test.ts) beside the
 * real stores of `@idem/store-drizzle`, so what it answers is what a store answers.
 *
 * Deliberate differences from a real store, none of them reached by the store contract's cases:
 * - One caller at a time: every call runs to its end before the next begins (no statement awaits),
 *   so nothing waits on a lock, and a claim is `busy` only when `busyNext` says so, or when an
 *   external call may still be in flight (as in a real store).
 * - A transaction is a snapshot of the records, put back when its function throws. Calls made
 *   meanwhile outside it see its writes (no isolation between transactions), and writes of other
 *   callers made meanwhile are rolled back with it.
 * - `seed` and `record` put rows in place that no sequence of calls reaches (any state, any
 *   field): the fields a real store computes when it reads a row (`leaseExpired`,
 *   `leaseRemainingMs`, `replayExpired`) are computed from the row's times at every read, and a
 *   seeded row that gives them without the times gets times that agree with them.
 */
import { randomUUID } from 'node:crypto';
import type {
  AuditEntry,
  ClaimInput,
  ClaimResult,
  Fence,
  KeyAnswer,
  OutcomeRecord,
  RecordedAtCommit,
  RecordState,
  RecoveryRecord,
  ReconciliationReason,
  RecoveryStore,
  Resolution,
  StoredResponse,
  StuckReport,
} from '@idem/contract';
import {
  DEFAULT_MAX_TAKEOVERS,
  FINGERPRINT_VERSION,
  RECONCILIATION_REASONS,
  REAPABLE_STATES,
} from '@idem/contract';
import { fingerprint } from '../../src/hashing/fingerprint.js';
import { createIdemTelemetry } from '../../src/telemetry/idemTelemetry.js';
import { jsonSerializer } from '../../src/replay/jsonSerializer.js';
import type { IdemServerEvent } from '../../src/types/IdemServerEvent.js';
import type {
  IdemJob,
  IdemRuntime,
  NextResult,
  ResolvedProcedureOptions,
} from '../../src/types/IdemJob.js';

/** The transaction handle of {@link MemoryStore}: which transaction a call belongs to. */
export interface MemoryTx {
  readonly id: number;
}

type Key = { scope: string; procedure: string; keyHash: string };
const keyOf = (key: Key) => `${key.scope}\u0000${key.procedure}\u0000${key.keyHash}`;

/** The largest `lock_timeout` PostgreSQL accepts, and the largest `limit`, as a real store's. */
const MAX_INT = 2_147_483_647;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const RESOLVABLE: readonly RecordState[] = [
  'PENDING',
  'IN_PROGRESS',
  'OUTCOME_UNKNOWN',
  'NEEDS_RECONCILIATION',
  'RETRYABLE_FAILURE',
];
const UNSETTLED = ['OUTCOME_UNKNOWN', 'NEEDS_RECONCILIATION'] as const;

/** What every view (`later`) of one store shares: its table of records and its audit table. */
interface Records {
  /** Every row by id, superseded ones included, oldest first. */
  byId: Map<string, RecoveryRecord>;
  /** The live row of each key (the rows a real store's unique index covers). */
  live: Map<string, RecoveryRecord>;
  audit: AuditEntry[];
  nextId: number;
  nextAuditId: number;
  tx: number;
}

export class MemoryStore implements RecoveryStore<MemoryTx> {
  /** The next claim answers `busy` (another transaction holds the key past lockTimeoutMs). */
  busyNext = false;
  /** The next call of this method rejects, as a database that went away does. */
  failNext: 'claim' | 'complete' | 'fail' | 'record' | 'read' | null = null;
  /** The next `complete` finds the fence broken (returns false). */
  staleNext = false;
  /**
   * What the next `commitWithRecord` meets when it records: `taken` puts `record` in place (a
   * concurrent request's record that committed first) and rolls the work back; `busy` rolls back.
   */
  commitNext: { kind: 'taken'; record: RecoveryRecord } | { kind: 'busy' } | null = null;
  /** Every `saveSteps` that held its fence, in order (what a phase committed, and when). */
  saved: { steps: string; recoveryPoint: string | null; irreversible: boolean }[] = [];
  #records: Records = {
    byId: new Map(),
    live: new Map(),
    audit: [],
    nextId: 1,
    nextAuditId: 1,
    tx: 0,
  };
  readonly #now: () => number;

  /** `now`: the store's clock, in epoch milliseconds. Defaults to `Date.now`. */
  constructor(options: { now?: () => number } = {}) {
    this.#now = options.now ?? Date.now;
  }

  /** The live row of each key, as an earlier request left it. */
  get rows(): Map<string, RecoveryRecord> {
    return this.#records.live;
  }

  /** A view of the same records whose clock runs `shiftMs` ahead: a worker arriving later. */
  later(shiftMs: number): MemoryStore {
    const view = new MemoryStore({ now: () => this.#now() + shiftMs });
    view.#records = this.#records;
    return view;
  }

  async transaction<T>(fn: (tx: MemoryTx) => Promise<T>): Promise<T> {
    const records = this.#records;
    const rows = [...records.byId.values()].map((row) => ({
      row: { ...row },
      live: records.live.get(keyOf(row)) === row,
    }));
    const audit = records.audit.length;
    try {
      return await fn({ id: ++records.tx });
    } catch (error) {
      records.byId.clear();
      records.live.clear();
      for (const { row, live } of rows) {
        records.byId.set(row.id, row);
        if (live) records.live.set(keyOf(row), row);
      }
      records.audit.length = audit;
      throw error;
    }
  }

  async claim(input: ClaimInput): Promise<ClaimResult> {
    assertMilliseconds('leaseMs', input.leaseMs, 1);
    if (input.maxTakeovers !== undefined) assertCount('maxTakeovers', input.maxTakeovers, 0);
    if (input.lockTimeoutMs !== undefined) {
      assertMilliseconds('lockTimeoutMs', input.lockTimeoutMs, 1, MAX_INT);
    }
    if (input.operationId !== undefined && !UUID.test(input.operationId)) {
      throw new TypeError(
        `operationId must be a UUID (e.g. from crypto.randomUUID()), got ${JSON.stringify(input.operationId)}`,
      );
    }
    this.#maybeFail('claim');
    if (this.busyNext) {
      this.busyNext = false;
      return { kind: 'busy' };
    }
    const now = this.#now();
    const row = this.#records.live.get(keyOf(input));
    if (row !== undefined) {
      const sameRequest = row.fingerprint === input.fingerprint;
      const released = row.state === 'RETRYABLE_FAILURE';
      const callSettled = row.takeoverAfter === null || row.takeoverAfter.getTime() <= now;
      const leaseRanOut = row.state === 'IN_PROGRESS' && passed(row.leaseExpiresAt, now);
      const outcomeUnknown = row.state === 'OUTCOME_UNKNOWN';
      if (sameRequest && (released || outcomeUnknown) && !callSettled) return { kind: 'busy' };
      if (sameRequest && callSettled && (released || leaseRanOut || outcomeUnknown)) {
        const maxTakeovers = input.maxTakeovers ?? DEFAULT_MAX_TAKEOVERS;
        const record = this.#takeOver(row, input.owner, input.leaseMs, maxTakeovers, !released);
        return record.state === 'IN_PROGRESS'
          ? { kind: 'claimed', record, takeover: true }
          : { kind: 'existing', record, reconciled: 'takeover_limit' };
      }
      const replayable = row.state === 'COMPLETED' || row.state === 'TERMINAL_FAILURE';
      if (!(replayable && passed(row.replayExpiresAt, now))) {
        return { kind: 'existing', record: this.#view(row) };
      }
      // The replay window has closed: the row stays, superseded, and the key is a new request.
      Object.assign(row, { supersededAt: new Date(now), updatedAt: new Date(now) });
      this.#records.live.delete(keyOf(row));
    }
    const record = this.#insert(
      this.record(input, {
        state: input.pending ? 'PENDING' : 'IN_PROGRESS',
        leaseOwner: input.pending ? null : input.owner,
        leaseExpiresAt: input.pending ? null : new Date(now + input.leaseMs),
        createdAt: new Date(now),
        updatedAt: new Date(now),
        inputText: input.input ?? null,
        ...(input.operationId === undefined ? {} : { operationId: input.operationId }),
      }),
    );
    return { kind: 'claimed', record, takeover: false };
  }

  async commitWithRecord<T>(
    work: (tx: MemoryTx) => Promise<{ value: T; record: OutcomeRecord }>,
  ): Promise<RecordedAtCommit<T>> {
    const next = this.commitNext;
    this.commitNext = null;
    let verdict: RecordedAtCommit<T> | null = null;
    try {
      return await this.transaction(async (tx) => {
        const { value, record } = await work(tx);
        assertWindows(record.response);
        assertMilliseconds('lockTimeoutMs', record.lockTimeoutMs, 1, MAX_INT);
        this.#maybeFail('record');
        if (next?.kind === 'busy') throw (verdict = { kind: 'busy' });
        if (next?.kind === 'taken' || this.#records.live.has(keyOf(record))) {
          throw (verdict = { kind: 'taken' });
        }
        this.#insert(this.#outcomeRow(record));
        return { kind: 'recorded', value } as const;
      });
    } catch (error) {
      if (error !== verdict || verdict === null) throw error;
      if (next?.kind === 'taken') this.seed(next.record);
      return verdict;
    }
  }

  async insertOutcome(record: OutcomeRecord): Promise<boolean> {
    assertWindows(record.response);
    this.#maybeFail('fail');
    if (this.#records.live.has(keyOf(record))) return false;
    this.#insert(this.#outcomeRow(record));
    return true;
  }

  #outcomeRow(record: OutcomeRecord): RecoveryRecord {
    const now = this.#now();
    return this.record(record, {
      state: record.state,
      operationId: record.operationId,
      createdAt: new Date(now),
      updatedAt: new Date(now),
      ...storedOutcome(record.response, now),
    });
  }

  async readAnswer(key: Key): Promise<KeyAnswer | null> {
    const row = await this.read(key);
    if (row === null) return null;
    const { state, fingerprint, fingerprintVersion, operationId, responseStatus } = row;
    const { responseBody, replayExpired } = row;
    return {
      state,
      fingerprint,
      fingerprintVersion,
      operationId,
      responseStatus,
      responseBody,
      replayExpired,
    };
  }

  async read(key: Key): Promise<RecoveryRecord | null> {
    this.#maybeFail('read');
    const row = this.#records.live.get(keyOf(key));
    return row === undefined ? null : this.#view(row);
  }

  async readRecovery(key: Key): Promise<RecoveryRecord | null> {
    return this.read(key);
  }

  async findByOperationId(operationId: string): Promise<RecoveryRecord | null> {
    if (!UUID.test(operationId)) return null;
    for (const row of this.#records.byId.values()) {
      if (row.operationId === operationId) return this.#view(row);
    }
    return null;
  }

  async complete(fence: Fence, response: StoredResponse): Promise<boolean> {
    assertWindows(response);
    this.#maybeFail('complete');
    if (this.staleNext) {
      this.staleNext = false;
      return false;
    }
    return this.#finish(fence, 'COMPLETED', response);
  }

  async fail(fence: Fence, response: StoredResponse): Promise<boolean> {
    assertWindows(response);
    this.#maybeFail('fail');
    return this.#finish(fence, 'TERMINAL_FAILURE', response);
  }

  async release(fence: Fence, windows: Pick<StoredResponse, 'retentionMs'>): Promise<boolean> {
    assertMilliseconds('retentionMs', windows.retentionMs, 0);
    const row = this.#owned(fence);
    if (!row) return false;
    const now = this.#now();
    Object.assign(row, {
      state: 'RETRYABLE_FAILURE',
      leaseOwner: null,
      leaseExpiresAt: null,
      purgeAfter: releasedPurgeAfter(row, windows.retentionMs, now),
      updatedAt: new Date(now),
    });
    return true;
  }

  /** A record as the store would hand it out, for tests that start from a given state. */
  record(
    key: Key & { fingerprint: string; fingerprintVersion: number },
    fields: Partial<RecoveryRecord> = {},
  ): RecoveryRecord {
    const now = new Date(this.#now());
    return {
      id: String(this.#records.nextId++),
      scope: key.scope,
      procedure: key.procedure,
      keyHash: key.keyHash,
      fingerprint: key.fingerprint,
      fingerprintVersion: key.fingerprintVersion,
      state: 'IN_PROGRESS',
      version: 1,
      leaseOwner: null,
      leaseExpiresAt: null,
      attempts: 1,
      recoveryPoint: null,
      operationId: randomUUID(),
      responseStatus: null,
      responseBody: null,
      createdAt: now,
      updatedAt: now,
      completedAt: null,
      replayExpiresAt: null,
      purgeAfter: null,
      leaseExpired: false,
      replayExpired: false,
      leaseRemainingMs: 30_000,
      steps: null,
      inputText: null,
      irreversibleAt: null,
      erasedAt: null,
      supersededAt: null,
      takeoverAfter: null,
      takeovers: 0,
      reconcileReason: null,
      ...fields,
    };
  }

  /**
   * Puts a record in place as the live row of its key, as an earlier request would have left it.
   * Read-time fields given without the times behind them get times that agree with them: an
   * in-progress row's lease ends `leaseRemainingMs` from now (or has ended, `leaseExpired`), and
   * a `replayExpired` row's window has closed.
   */
  seed(record: RecoveryRecord): void {
    const now = this.#now();
    if (record.leaseExpiresAt === null && record.state === 'IN_PROGRESS') {
      if (record.leaseExpired) record.leaseExpiresAt = new Date(now - 1);
      else if (record.leaseRemainingMs > 0) {
        record.leaseExpiresAt = new Date(now + record.leaseRemainingMs);
      }
    }
    if (record.replayExpired && !passed(record.replayExpiresAt, now)) {
      record.replayExpiresAt = new Date(now - 1);
    }
    const previous = this.#records.live.get(keyOf(record));
    if (previous !== undefined && previous.id !== record.id) {
      this.#records.byId.delete(previous.id);
    }
    this.#records.byId.set(record.id, record);
    this.#records.live.set(keyOf(record), record);
  }

  async saveSteps(
    fence: Fence,
    update: {
      steps: string;
      recoveryPoint: string | null;
      leaseMs: number;
      irreversible?: boolean;
      callTimeLimitMs?: number;
      callSettled?: boolean;
    },
  ): Promise<boolean> {
    assertMilliseconds('leaseMs', update.leaseMs, 1);
    const call = update.callTimeLimitMs;
    if (call !== undefined) assertMilliseconds('callTimeLimitMs', call, 1);
    const row = this.#owned(fence);
    if (!row) return false;
    const now = this.#now();
    // An erased record's steps are not written back (as the real store does).
    Object.assign(row, {
      steps: row.erasedAt ? null : update.steps,
      recoveryPoint: update.recoveryPoint,
      irreversibleAt: update.irreversible
        ? (row.irreversibleAt ?? new Date(now))
        : row.irreversibleAt,
      leaseExpiresAt: new Date(now + (call ?? 0) + update.leaseMs),
      takeoverAfter:
        call !== undefined
          ? new Date(now + 2 * call + update.leaseMs)
          : update.callSettled
            ? null
            : row.takeoverAfter,
      updatedAt: new Date(now),
    });
    this.saved.push({
      steps: update.steps,
      recoveryPoint: update.recoveryPoint,
      irreversible: update.irreversible ?? false,
    });
    return true;
  }

  async extendLease(fence: Fence, leaseMs: number): Promise<boolean> {
    assertMilliseconds('leaseMs', leaseMs, 1);
    const row = this.#owned(fence);
    if (!row) return false;
    const now = this.#now();
    const end = Math.max(row.leaseExpiresAt?.getTime() ?? 0, now + leaseMs);
    Object.assign(row, { leaseExpiresAt: new Date(end), updatedAt: new Date(now) });
    return true;
  }

  /** Another worker takes the record over: the version moves on, every older fence breaks. */
  takeOver(id: string): void {
    const row = this.#records.byId.get(id);
    if (row) row.version += 1;
  }

  async markUnsettled(
    fence: Fence,
    state: 'OUTCOME_UNKNOWN' | 'NEEDS_RECONCILIATION',
    reason?: ReconciliationReason,
  ): Promise<boolean> {
    if (!UNSETTLED.includes(state)) {
      throw new TypeError(`markUnsettled moves to ${UNSETTLED.join(' or ')}, got ${state}`);
    }
    if (reason !== undefined && !Object.hasOwn(RECONCILIATION_REASONS, reason)) {
      throw new TypeError(`markUnsettled: unknown reconciliation reason ${reason}`);
    }
    const row = this.#owned(fence);
    if (!row) return false;
    Object.assign(row, {
      state,
      reconcileReason: state === 'NEEDS_RECONCILIATION' ? (reason ?? null) : null,
      leaseOwner: null,
      leaseExpiresAt: null,
      purgeAfter: null,
      updatedAt: new Date(this.#now()),
    });
    return true;
  }

  async takeOverAbandoned(options: {
    owner: string;
    leaseMs: number;
    limit: number;
    procedures: readonly string[];
    maxTakeovers?: number;
  }): Promise<RecoveryRecord[]> {
    assertMilliseconds('leaseMs', options.leaseMs, 1);
    assertCount('limit', options.limit, 1);
    if (options.maxTakeovers !== undefined) {
      assertCount('maxTakeovers', options.maxTakeovers, 0);
    }
    const now = this.#now();
    const since = (row: RecoveryRecord) =>
      (row.state === 'IN_PROGRESS' ? row.leaseExpiresAt! : row.updatedAt).getTime();
    const abandoned = this.#select(
      (row) =>
        row.supersededAt === null &&
        (row.takeoverAfter === null || row.takeoverAfter.getTime() <= now) &&
        ((row.state === 'IN_PROGRESS' && passed(row.leaseExpiresAt, now)) ||
          row.state === 'OUTCOME_UNKNOWN') &&
        options.procedures.includes(row.procedure),
      since,
      options.limit,
    );
    const maxTakeovers = options.maxTakeovers ?? DEFAULT_MAX_TAKEOVERS;
    return abandoned.map((row) =>
      this.#takeOver(row, options.owner, options.leaseMs, maxTakeovers, true),
    );
  }

  async takePending(options: {
    owner: string;
    leaseMs: number;
    limit: number;
    procedures: readonly string[];
  }): Promise<RecoveryRecord[]> {
    assertMilliseconds('leaseMs', options.leaseMs, 1);
    assertCount('limit', options.limit, 1);
    const now = this.#now();
    const queued = this.#select(
      (row) =>
        row.state === 'PENDING' &&
        row.supersededAt === null &&
        options.procedures.includes(row.procedure),
      (row) => row.createdAt.getTime(),
      options.limit,
    );
    return queued.map((row) => {
      Object.assign(row, {
        state: 'IN_PROGRESS',
        version: row.version + 1,
        leaseOwner: options.owner,
        leaseExpiresAt: new Date(now + options.leaseMs),
        updatedAt: new Date(now),
      });
      return this.#view(row);
    });
  }

  async countPending(procedures: readonly string[]): Promise<number> {
    return [...this.#records.byId.values()].filter(
      (row) =>
        row.state === 'PENDING' && row.supersededAt === null && procedures.includes(row.procedure),
    ).length;
  }

  async cancel(
    fence: Fence,
    response: StoredResponse,
  ): Promise<'cancelled' | 'irreversible' | 'stale'> {
    assertWindows(response);
    const row = this.#records.byId.get(fence.id);
    if (
      row === undefined ||
      row.version !== fence.version ||
      (row.state !== 'IN_PROGRESS' && row.state !== 'PENDING')
    ) {
      return 'stale';
    }
    if (row.irreversibleAt !== null) return 'irreversible';
    const now = this.#now();
    Object.assign(row, {
      state: 'TERMINAL_FAILURE',
      version: row.version + 1,
      leaseOwner: null,
      leaseExpiresAt: null,
      ...storedOutcome(response, now),
      updatedAt: new Date(now),
    });
    return 'cancelled';
  }

  async reap(options: { limit: number }): Promise<number> {
    assertCount('limit', options.limit, 1);
    const now = this.#now();
    const reapable: readonly RecordState[] = REAPABLE_STATES;
    const doomed = this.#select(
      (row) => reapable.includes(row.state) && passed(row.purgeAfter, now),
      (row) => row.purgeAfter!.getTime(),
      options.limit,
    );
    for (const row of doomed) {
      this.#records.byId.delete(row.id);
      if (this.#records.live.get(keyOf(row)) === row) this.#records.live.delete(keyOf(row));
    }
    return doomed.length;
  }

  async stuckReport(options: { graceMs: number }): Promise<StuckReport> {
    assertMilliseconds('graceMs', options.graceMs, 0);
    const classes = this.#stuckClasses(options.graceMs);
    const rows = [...this.#records.byId.values()];
    const count = (test: (row: RecoveryRecord) => boolean) => rows.filter(test).length;
    return {
      abandoned: count(classes.abandoned),
      pendingTooLong: count(classes.pendingTooLong),
      outcomeUnknown: count(classes.outcomeUnknown),
      needsReconciliation: count(classes.needsReconciliation),
    };
  }

  async listStuck(options: { graceMs: number; limit: number }): Promise<RecoveryRecord[]> {
    assertMilliseconds('graceMs', options.graceMs, 0);
    assertCount('limit', options.limit, 1);
    const classes = Object.values(this.#stuckClasses(options.graceMs));
    return this.#select(
      (row) => classes.some((test) => test(row)),
      (row) => (row.state === 'IN_PROGRESS' ? row.leaseExpiresAt! : row.updatedAt).getTime(),
      options.limit,
    ).map((row) => this.#view(row));
  }

  async resolve(fence: Fence, resolution: Resolution): Promise<boolean> {
    assertResolution(resolution);
    const row = this.#records.byId.get(fence.id);
    if (row === undefined || row.version !== fence.version || !RESOLVABLE.includes(row.state)) {
      return false;
    }
    const now = this.#now();
    const { state: fromState, version: fromVersion } = row;
    Object.assign(row, {
      state: resolution.state,
      version: row.version + 1,
      leaseOwner: null,
      leaseExpiresAt: null,
      takeovers: 0,
      reconcileReason: null,
      ...(resolution.state === 'RETRYABLE_FAILURE'
        ? { purgeAfter: releasedPurgeAfter(row, resolution.retentionMs, now) }
        : storedOutcome(resolution.response, now)),
      updatedAt: new Date(now),
    });
    this.#records.audit.push({
      id: String(this.#records.nextAuditId++),
      recordId: row.id,
      operationId: row.operationId,
      actor: resolution.actor,
      action: 'resolve',
      fromState,
      toState: resolution.state,
      fromVersion,
      note: resolution.note,
      at: new Date(now),
    });
    return true;
  }

  async listAudit(recordId: string): Promise<AuditEntry[]> {
    if (!/^[1-9][0-9]{0,18}$/.test(recordId)) {
      throw new TypeError(
        `a record id is a positive decimal integer string, got ${JSON.stringify(recordId)}`,
      );
    }
    return this.#records.audit
      .filter((entry) => entry.recordId === recordId)
      .map((e) => ({ ...e }));
  }

  async eraseScope(scope: string): Promise<number> {
    const now = this.#now();
    let erased = 0;
    for (const row of this.#records.byId.values()) {
      if (row.scope !== scope) continue;
      const holdsData = row.responseBody !== null || row.inputText !== null || row.steps !== null;
      if (row.erasedAt !== null && !holdsData) continue;
      Object.assign(row, {
        responseBody: null,
        inputText: null,
        steps: null,
        erasedAt: new Date(now),
      });
      erased++;
    }
    return erased;
  }

  #insert(row: RecoveryRecord): RecoveryRecord {
    this.#records.byId.set(row.id, row);
    this.#records.live.set(keyOf(row), row);
    return this.#view(row);
  }

  /**
   * A takeover of `row` by `owner`, or past the cap (`counts` and `maxTakeovers` takeovers
   * already) a move to NEEDS_RECONCILIATION, owned by nobody.
   */
  #takeOver(
    row: RecoveryRecord,
    owner: string,
    leaseMs: number,
    maxTakeovers: number,
    counts: boolean,
  ): RecoveryRecord {
    const now = this.#now();
    const capped = counts && row.takeovers >= maxTakeovers;
    Object.assign(row, {
      state: capped ? 'NEEDS_RECONCILIATION' : 'IN_PROGRESS',
      version: row.version + 1,
      attempts: capped ? row.attempts : row.attempts + 1,
      takeovers: capped || !counts ? row.takeovers : row.takeovers + 1,
      reconcileReason: capped ? 'takeover_limit' : null,
      leaseOwner: capped ? null : owner,
      leaseExpiresAt: capped ? null : new Date(now + leaseMs),
      purgeAfter: null,
      updatedAt: new Date(now),
    });
    return this.#view(row);
  }

  /** At most `limit` rows that pass `test`, by `since`, then id. */
  #select(
    test: (row: RecoveryRecord) => boolean,
    since: (row: RecoveryRecord) => number,
    limit: number,
  ): RecoveryRecord[] {
    return [...this.#records.byId.values()]
      .filter(test)
      .sort((a, b) => since(a) - since(b) || Number(a.id) - Number(b.id))
      .slice(0, limit);
  }

  #stuckClasses(graceMs: number) {
    const graceAgo = this.#now() - graceMs;
    return {
      abandoned: (row: RecoveryRecord) =>
        row.state === 'IN_PROGRESS' && passed(row.leaseExpiresAt, graceAgo),
      pendingTooLong: (row: RecoveryRecord) =>
        row.state === 'PENDING' && row.updatedAt.getTime() <= graceAgo,
      outcomeUnknown: (row: RecoveryRecord) => row.state === 'OUTCOME_UNKNOWN',
      needsReconciliation: (row: RecoveryRecord) => row.state === 'NEEDS_RECONCILIATION',
    };
  }

  /** A copy of `row` with the fields a real store computes when it reads the row, by its clock. */
  #view(row: RecoveryRecord): RecoveryRecord {
    const now = this.#now();
    const lease = row.leaseExpiresAt?.getTime();
    return {
      ...row,
      leaseExpired: lease !== undefined && lease <= now,
      leaseRemainingMs: lease === undefined ? 0 : Math.max(Math.ceil(lease - now), 0),
      replayExpired: passed(row.replayExpiresAt, now),
    };
  }

  #owned(fence: Fence): RecoveryRecord | undefined {
    const row = this.#records.byId.get(fence.id);
    return row !== undefined && row.version === fence.version && row.state === 'IN_PROGRESS'
      ? row
      : undefined;
  }

  #finish(fence: Fence, state: 'COMPLETED' | 'TERMINAL_FAILURE', response: StoredResponse) {
    const row = this.#owned(fence);
    if (!row) return false;
    const now = this.#now();
    Object.assign(row, {
      state,
      ...storedOutcome(response, now),
      responseBody: row.erasedAt ? null : response.body,
      leaseOwner: null,
      leaseExpiresAt: null,
      updatedAt: new Date(now),
    });
    return true;
  }

  #maybeFail(method: NonNullable<MemoryStore['failNext']>) {
    if (this.failNext !== method) return;
    this.failNext = null;
    throw Object.assign(new Error('connection refused'), { code: 'ECONNREFUSED' });
  }
}

/** `instant` is set and not after `now`. */
function passed(instant: Date | null, now: number): boolean {
  return instant !== null && instant.getTime() <= now;
}

/** The columns a stored outcome sets (complete, fail, cancel, an operator's resolve). */
function storedOutcome(response: StoredResponse, now: number) {
  return {
    responseStatus: response.status,
    responseBody: response.body,
    completedAt: new Date(now),
    replayExpiresAt: new Date(now + response.replayWindowMs),
    purgeAfter: new Date(now + response.retentionMs),
  };
}

/** A released key's cleanup time: `retentionMs` from now, never before its `takeoverAfter`. */
function releasedPurgeAfter(row: RecoveryRecord, retentionMs: number, now: number): Date {
  return new Date(Math.max(now + retentionMs, row.takeoverAfter?.getTime() ?? 0));
}

function assertMilliseconds(
  name: string,
  value: number,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
) {
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new RangeError(
      `${name} must be an integer number of milliseconds from ${min} to ${max}, got ${value}`,
    );
  }
}

function assertCount(name: string, value: number, min: number) {
  if (!Number.isSafeInteger(value) || value < min || value > MAX_INT) {
    throw new RangeError(`${name} must be an integer from ${min} to ${MAX_INT}, got ${value}`);
  }
}

function assertWindows(response: { replayWindowMs: number; retentionMs: number }) {
  assertMilliseconds('replayWindowMs', response.replayWindowMs, 0);
  assertMilliseconds('retentionMs', response.retentionMs, 0);
}

/** What a real store refuses of a resolution before it writes (a caller without types). */
function assertResolution(resolution: Resolution) {
  const { state, response, actor } = resolution;
  if (state !== 'COMPLETED' && state !== 'TERMINAL_FAILURE' && state !== 'RETRYABLE_FAILURE') {
    throw new TypeError(
      `a resolution sets COMPLETED, TERMINAL_FAILURE or RETRYABLE_FAILURE, got ${String(state)}`,
    );
  }
  if (state === 'RETRYABLE_FAILURE') {
    if (response !== undefined) {
      throw new TypeError('a RETRYABLE_FAILURE resolution releases the key and stores no response');
    }
    if (resolution.retentionMs === undefined) {
      throw new TypeError('a RETRYABLE_FAILURE resolution needs retentionMs');
    }
    assertMilliseconds('retentionMs', resolution.retentionMs, 0);
  } else {
    if (response === undefined) {
      throw new TypeError(`a ${state} resolution needs the response to replay from now on`);
    }
    assertWindows(response);
  }
  if (actor.trim() === '') throw new TypeError('a resolution names its actor, for the audit row');
}

/** A job on `store` for a unit test, with the events it emits and the headers it sets. */
export function unitJob(
  store: MemoryStore,
  options: {
    input?: unknown;
    next?: (idem: object) => Promise<NextResult>;
    procedure?: Partial<ResolvedProcedureOptions>;
  } = {},
) {
  const events: IdemServerEvent[] = [];
  const headers = new Map<string, string>();
  const runtime: IdemRuntime = {
    store,
    serializer: jsonSerializer,
    owner: 'unit',
    inProgressRetryAfterMs: 1000,
    maxTakeovers: 5,
    inputCipher: null,
    telemetry: createIdemTelemetry({ tracing: false }),
    keySecrets: { current: 'k'.repeat(32), previous: [] },
    queue: null,
    acceptedPaths: new Set(),
    inFlight: new Map(),
    windows: new ProcedureWindowRegistry({
      replayWindowMs: 86_400_000,
      retentionMs: 259_200_000,
    }),
    statusLocation: null,
    emit: (event) => void events.push(event),
  };
  const event = { procedure: 'orders.create', scope: 'acct', keyHash: 'k1', requestId: null };
  const job: IdemJob = {
    runtime,
    options: {
      mode: 'local',
      replayWindowMs: 60_000,
      retentionMs: 120_000,
      leaseMs: 30_000,
      lockTimeoutMs: 2000,
      // The claim-first path by default; the at-commit tests ask for theirs.
      claim: 'first',
      failures: 'deterministic',
      scopeSuffix: undefined,
      respond: 'result',
      replay: { kind: 'full' },
      keys: 'required',
      ...options.procedure,
    },
    request: {
      keyValues: ['k1'],
      requestId: null,
      attempt: null,
      timeoutMs: null,
      receivedAt: Date.now(),
      response: { headers },
    },
    claim: {
      scope: 'acct',
      procedure: 'orders.create',
      keyHash: 'k1',
      fingerprint: fingerprint(options.input ?? { amount: 1 }),
      fingerprintVersion: FINGERPRINT_VERSION,
      leaseMs: 30_000,
      owner: 'unit',
      operationId: randomUUID(),
    },
    input: options.input ?? { amount: 1 },
    ctx: {},
    resume: null,
    execution: {
      protected: true,
      keyHash: 'k1',
      scope: 'acct',
      procedure: 'orders.create',
      requestId: null,
      clientAttempt: null,
      remainingMs: () => null,
    },
    event,
    next: options.next ?? (async () => ({ ok: true, data: { id: 1 }, marker: null })),
  };
  return { job, events, headers };
}

/**
 * What `runRequest` does with a job's outcome: a refusal the executor throws is answered (its
 * events and Retry-After, `answerRefusal`), then thrown on.
 */
export function answered<T>(job: IdemJob, outcome: Promise<T>): Promise<T> {
  return outcome.catch((error: unknown) => {
    answerRefusal(job, error);
    throw error;
  });
}
