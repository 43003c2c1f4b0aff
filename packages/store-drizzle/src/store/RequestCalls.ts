import type {
  ClaimInput,
  ClaimResult,
  Fence,
  KeyAnswer,
  OutcomeRecord,
  RecordedAtCommit,
  RecoveryRecord,
  StoredResponse,
} from '@idem/contract';
import { assertMilliseconds, assertWindows } from '../drizzle/assertMilliseconds.js';
import { rowsOf, templateRows } from '../drizzle/executeRows.js';
import { hasSqlState, LOCK_NOT_AVAILABLE, violates } from '../drizzle/hasSqlState.js';
import { toRecoveryRecord, type RecordRow } from '../drizzle/recordProjection.js';
import { LIVE_KEY_INDEX } from '../schema.js';
import { claimKey, MAX_LOCK_TIMEOUT_MS } from '../statements/request/claimKey.js';
import * as completion from '../statements/request/completionStatements.js';
import * as recovery from '../statements/request/recoveryStatements.js';
import type { StoreParts } from './StoreParts.js';

/**
 * The request path of `DrizzleIdempotencyStore` (see its methods for what each call promises):
 * a request's claim, its reads of the key, the outcome recorded at commit, and the owner's fenced
 * writes (complete, fail, release, steps). `readAnswer`, `commitWithRecord` and `claim` are the
 * hot path: the store's method is one plain call into them, which adds no closure or object.
 */
export class RequestCalls<TTx> {
  readonly #parts: StoreParts<TTx>;

  constructor(parts: StoreParts<TTx>) {
    this.#parts = parts;
  }

  transaction<T>(fn: (tx: TTx) => Promise<T>): Promise<T> {
    return this.#parts.db.transaction(fn);
  }

  async claim(input: ClaimInput, tx?: TTx): Promise<ClaimResult> {
    return claimKey(this.#parts.statements(tx), input, this.#parts.clock);
  }

  async read(
    key: { scope: string; procedure: string; keyHash: string },
    tx?: TTx,
  ): Promise<RecoveryRecord | null> {
    const [row] = await templateRows<RecordRow>(
      this.#parts.statements(tx),
      this.#parts.templates.readLive,
      {
        scope: key.scope,
        procedure: key.procedure,
        keyHash: key.keyHash,
      },
    );
    return row === undefined ? null : toRecoveryRecord(row);
  }

  async readAnswer(key: {
    scope: string;
    procedure: string;
    keyHash: string;
  }): Promise<KeyAnswer | null> {
    const [row] = await templateRows<AnswerRow>(
      this.#parts.statements(),
      this.#parts.templates.readAnswer,
      {
        scope: key.scope,
        procedure: key.procedure,
        keyHash: key.keyHash,
      },
    );
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

  async commitWithRecord<T>(
    work: (tx: TTx) => Promise<{ value: T; record: OutcomeRecord }>,
  ): Promise<RecordedAtCommit<T>> {
    let recorded: Promise<unknown> | undefined;
    let value: T;
    try {
      value = await this.#parts.db.transaction(async (tx) => {
        const done = await work(tx);
        const runner = this.#parts.statements(tx);
        const values = outcomeValues(done.record);
        if (runner.sendLast) {
          recorded = runner.sendLast(this.#parts.templates.recordOutcome, values);
        } else {
          recorded = runner.run(this.#parts.templates.recordOutcome, values);
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

  async insertOutcome(record: OutcomeRecord): Promise<boolean> {
    assertWindows(record.response);
    const result = await this.#parts
      .statements()
      .run(this.#parts.templates.outcomeUnlessLive, outcomeValues(record));
    return rowsOf(result).length > 0;
  }

  async complete(fence: Fence, response: StoredResponse, tx?: TTx): Promise<boolean> {
    assertWindows(response);
    const statement = completion.finish('COMPLETED', fence, response, this.#parts.clock);
    return this.#parts.written(statement, tx);
  }

  async fail(fence: Fence, response: StoredResponse, tx?: TTx): Promise<boolean> {
    assertWindows(response);
    const statement = completion.finish('TERMINAL_FAILURE', fence, response, this.#parts.clock);
    return this.#parts.written(statement, tx);
  }

  async release(
    fence: Fence,
    windows: Pick<StoredResponse, 'retentionMs'>,
    tx?: TTx,
  ): Promise<boolean> {
    assertMilliseconds('retentionMs', windows.retentionMs, 0);
    return this.#parts.written(completion.release(fence, windows, this.#parts.clock), tx);
  }

  async saveSteps(fence: Fence, update: recovery.StepsUpdate, tx?: TTx): Promise<boolean> {
    assertMilliseconds('leaseMs', update.leaseMs, 1);
    if (update.callTimeLimitMs !== undefined) {
      assertMilliseconds('callTimeLimitMs', update.callTimeLimitMs, 1);
    }
    return this.#parts.written(recovery.saveSteps(fence, update, this.#parts.clock), tx);
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
