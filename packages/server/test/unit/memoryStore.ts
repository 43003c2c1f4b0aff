import { ProcedureWindowRegistry } from '../../src/request/procedureWindows.js';
import { answerRefusal } from '../../src/executors/answerRefusal.js';
/**
 * A small in-memory key store for unit tests of the server's decision modules: the local-mode
 * part of the contract (claim, read, complete, fail, release in transactions that roll back),
 * decided in milliseconds, with knobs for the answers a database gives under races (`busy`) and
 * outages (`failNext`). Of the recovery methods only `saveSteps`, `extendLease` (for phases)
 * and `markUnsettled` (for external mode) are modelled; the others throw. The conformance suites
 * of `@idem/store-drizzle` are where the real store's behaviour is proven.
 */
import { randomUUID } from 'node:crypto';
import type {
  ClaimInput,
  ClaimResult,
  Fence,
  OutcomeRecord,
  RecordedAtCommit,
  RecoveryRecord,
  ReconciliationReason,
  RecoveryStore,
  StoredResponse,
} from '@idem/contract';
import { FINGERPRINT_VERSION } from '@idem/contract';
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

const notModelled = (name: string) => () =>
  Promise.reject(new Error(`MemoryStore does not model ${name}`));

export class MemoryStore implements RecoveryStore<MemoryTx> {
  rows = new Map<string, RecoveryRecord>();
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
  #tx = 0;
  #nextId = 1;

  async transaction<T>(fn: (tx: MemoryTx) => Promise<T>): Promise<T> {
    const snapshot = new Map([...this.rows].map(([k, row]) => [k, { ...row }]));
    try {
      return await fn({ id: ++this.#tx });
    } catch (error) {
      this.rows = snapshot;
      throw error;
    }
  }

  async claim(input: ClaimInput): Promise<ClaimResult> {
    this.#maybeFail('claim');
    if (this.busyNext) {
      this.busyNext = false;
      return { kind: 'busy' };
    }
    const existing = this.rows.get(keyOf(input));
    if (existing && existing.state !== 'RETRYABLE_FAILURE') {
      return { kind: 'existing', record: { ...existing } };
    }
    const now = new Date();
    const record: RecoveryRecord = existing
      ? {
          ...existing,
          state: 'IN_PROGRESS',
          version: existing.version + 1,
          attempts: existing.attempts + 1,
          leaseOwner: input.owner,
        }
      : this.record(input, {
          state: 'IN_PROGRESS',
          leaseOwner: input.owner,
          createdAt: now,
          ...(input.operationId === undefined ? {} : { operationId: input.operationId }),
        });
    this.rows.set(keyOf(input), record);
    return { kind: 'claimed', record: { ...record }, takeover: existing !== undefined };
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
        this.#maybeFail('record');
        if (next?.kind === 'busy') throw (verdict = { kind: 'busy' });
        if (next?.kind === 'taken' || this.rows.has(keyOf(record))) {
          throw (verdict = { kind: 'taken' });
        }
        this.rows.set(keyOf(record), this.#outcomeRow(record));
        return { kind: 'recorded', value } as const;
      });
    } catch (error) {
      if (error !== verdict || verdict === null) throw error;
      if (next?.kind === 'taken') this.rows.set(keyOf(next.record), next.record);
      return verdict;
    }
  }

  async insertOutcome(record: OutcomeRecord): Promise<boolean> {
    this.#maybeFail('fail');
    if (this.rows.has(keyOf(record))) return false;
    this.rows.set(keyOf(record), this.#outcomeRow(record));
    return true;
  }

  #outcomeRow(record: OutcomeRecord): RecoveryRecord {
    const now = new Date();
    return this.record(record, {
      state: record.state,
      operationId: record.operationId,
      responseStatus: record.response.status,
      responseBody: record.response.body,
      completedAt: now,
      replayExpiresAt: new Date(now.getTime() + record.response.replayWindowMs),
      purgeAfter: new Date(now.getTime() + record.response.retentionMs),
      leaseRemainingMs: 0,
    });
  }

  async readAnswer(key: Key): Promise<RecoveryRecord | null> {
    return this.read(key);
  }

  async read(key: Key): Promise<RecoveryRecord | null> {
    this.#maybeFail('read');
    return this.rows.get(keyOf(key)) ?? null;
  }

  async readRecovery(key: Key): Promise<RecoveryRecord | null> {
    return this.read(key);
  }

  async complete(fence: Fence, response: StoredResponse): Promise<boolean> {
    this.#maybeFail('complete');
    if (this.staleNext) {
      this.staleNext = false;
      return false;
    }
    return this.#finish(fence, 'COMPLETED', response);
  }

  async fail(fence: Fence, response: StoredResponse): Promise<boolean> {
    this.#maybeFail('fail');
    return this.#finish(fence, 'TERMINAL_FAILURE', response);
  }

  async release(fence: Fence, windows: Pick<StoredResponse, 'retentionMs'>): Promise<boolean> {
    const row = this.#owned(fence);
    if (!row) return false;
    Object.assign(row, {
      state: 'RETRYABLE_FAILURE',
      leaseOwner: null,
      purgeAfter: new Date(Date.now() + windows.retentionMs),
    });
    return true;
  }

  /** A record as the store would hand it out, for tests that start from a given state. */
  record(
    key: Key & { fingerprint: string; fingerprintVersion: number },
    fields: Partial<RecoveryRecord> = {},
  ): RecoveryRecord {
    const now = new Date();
    return {
      id: String(this.#nextId++),
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

  /** Puts a record in place, as an earlier request would have left it. */
  seed(record: RecoveryRecord): void {
    this.rows.set(keyOf(record), record);
  }

  findByOperationId = notModelled('findByOperationId');
  /** Every `saveSteps` that held its fence, in order (what a phase committed, and when). */
  saved: { steps: string; recoveryPoint: string | null; irreversible: boolean }[] = [];

  async saveSteps(
    fence: Fence,
    update: { steps: string; recoveryPoint: string | null; irreversible?: boolean },
  ): Promise<boolean> {
    const row = this.#owned(fence);
    if (!row) return false;
    // An erased record's steps are not written back (as the real store does).
    Object.assign(row, {
      steps: row.erasedAt ? null : update.steps,
      recoveryPoint: update.recoveryPoint,
    });
    this.saved.push({
      steps: update.steps,
      recoveryPoint: update.recoveryPoint,
      irreversible: update.irreversible ?? false,
    });
    return true;
  }

  async extendLease(fence: Fence): Promise<boolean> {
    return this.#owned(fence) !== undefined;
  }

  /** Another worker takes the record over: the version moves on, every older fence breaks. */
  takeOver(id: string): void {
    const row = [...this.rows.values()].find((r) => r.id === id);
    if (row) row.version += 1;
  }

  async markUnsettled(
    fence: Fence,
    state: 'OUTCOME_UNKNOWN' | 'NEEDS_RECONCILIATION',
    reason?: ReconciliationReason,
  ): Promise<boolean> {
    const row = this.#owned(fence);
    if (!row) return false;
    Object.assign(row, { state, reconcileReason: reason ?? null, leaseOwner: null });
    return true;
  }
  takeOverAbandoned = notModelled('takeOverAbandoned');
  takePending = notModelled('takePending');
  countPending = notModelled('countPending');
  cancel = notModelled('cancel');
  reap = notModelled('reap');
  stuckReport = notModelled('stuckReport');
  listStuck = notModelled('listStuck');
  resolve = notModelled('resolve');
  listAudit = notModelled('listAudit');
  eraseScope = notModelled('eraseScope');

  #owned(fence: Fence): RecoveryRecord | undefined {
    return [...this.rows.values()].find(
      (row) => row.id === fence.id && row.version === fence.version && row.state === 'IN_PROGRESS',
    );
  }

  #finish(fence: Fence, state: 'COMPLETED' | 'TERMINAL_FAILURE', response: StoredResponse) {
    const row = this.#owned(fence);
    if (!row) return false;
    Object.assign(row, {
      state,
      responseStatus: response.status,
      responseBody: row.erasedAt ? null : response.body,
      leaseOwner: null,
    });
    return true;
  }

  #maybeFail(method: NonNullable<MemoryStore['failNext']>) {
    if (this.failNext !== method) return;
    this.failNext = null;
    throw Object.assign(new Error('connection refused'), { code: 'ECONNREFUSED' });
  }
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
