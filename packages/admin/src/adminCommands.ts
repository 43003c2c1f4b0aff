import type { RecoveryRecord, RecoveryStore, Resolution } from '@idem/contract';
import type { ResultSerializer } from '@idem/server';
import { checkResolution, hashIdempotencyKey } from '@idem/server/operator';
import { AdminInputError } from './AdminInputError.js';

/** A record as operators see it: bodies and inputs are shown only on request (they hold user data). */
export type RecordView = Omit<RecoveryRecord, 'responseBody' | 'inputText' | 'steps'> & {
  responseBody?: string | null;
  hasResponse: boolean;
  hasInput: boolean;
  stepNames: string[];
};

export function viewRecord(record: RecoveryRecord, showBodies = false): RecordView {
  const { responseBody, inputText, steps, ...rest } = record;
  return {
    ...rest,
    hasResponse: responseBody !== null,
    hasInput: inputText !== null,
    stepNames: steps ? Object.keys(JSON.parse(steps) as object) : [],
    ...(showBodies ? { responseBody } : {}),
  };
}

/**
 * The hash of a key as the store keeps it: HMAC-SHA256 keyed with the app's `keySecret`, over the
 * scope (the record's full scope, suffix included) and the key.
 */
export function keyHashOf(key: string, keySecret: string, scope: string): string {
  return hashIdempotencyKey(key, keySecret, scope);
}

/**
 * What `resolve` of {@link adminCommands} takes: the state, the response retries get, and the
 * procedure's windows. The windows have no defaults: they are the procedure's configuration,
 * which lives in the server's code, and a window shorter than the procedure's lets a late retry
 * (a queue's redelivery days later) run the work again.
 */
export type AdminResolution =
  | {
      state: 'COMPLETED' | 'TERMINAL_FAILURE';
      /**
       * What every retry gets, checked by `checkResolution` of `@idem/server`: the procedure's
       * output, or `{ code, message }` with a 4xx code. The status is derived when left out.
       */
      response: { status?: number; body: string };
      /** The procedure's `replayWindowMs`: the response is replayed that long. No default. */
      replayWindowMs: number;
      /**
       * The procedure's `retentionMs`, at least `replayWindowMs`: the record is deleted that long
       * after the resolution. No default.
       */
      retentionMs: number;
      /** Who resolved it (an operator's name or ticket), for the audit row. */
      actor: string;
      /** Why, for the audit row. */
      note: string;
    }
  | {
      /** Releases the key: the next retry takes the record over and resumes from its steps. */
      state: 'RETRYABLE_FAILURE';
      /** A released key stores no response. */
      response?: never;
      /** Nothing is replayed. */
      replayWindowMs?: never;
      /**
       * The procedure's `retentionMs`: the released record and its steps (the recorded intents
       * of external calls) are kept that long for the next retry. No default.
       */
      retentionMs: number;
      /** Who resolved it (an operator's name or ticket), for the audit row. */
      actor: string;
      /** Why, for the audit row. */
      note: string;
    };

/**
 * Throws an {@link AdminInputError} unless `resolution` carries the windows its state needs, as
 * the server accepts them for a procedure: whole positive milliseconds, retention at least the
 * replay window.
 */
function assertProcedureWindows(resolution: AdminResolution): void {
  const { state } = resolution;
  const window = (name: 'replayWindowMs' | 'retentionMs', value: number | undefined) => {
    if (value === undefined) {
      throw new AdminInputError(
        `resolve: ${state} needs the procedure's ${name} (there is no default: a shorter window than the procedure's lets a late retry run the work again)`,
      );
    }
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new AdminInputError(
        `resolve: ${name} must be a positive whole number of milliseconds, the procedure's, got ${value}`,
      );
    }
    return value;
  };
  if (state === 'RETRYABLE_FAILURE') {
    if (resolution.replayWindowMs !== undefined) {
      throw new AdminInputError(
        'resolve: RETRYABLE_FAILURE stores no response: give retentionMs only, no replayWindowMs',
      );
    }
    window('retentionMs', resolution.retentionMs);
    return;
  }
  const replayWindowMs = window('replayWindowMs', resolution.replayWindowMs);
  const retentionMs = window('retentionMs', resolution.retentionMs);
  if (retentionMs < replayWindowMs) {
    throw new AdminInputError(
      `resolve: retentionMs (${retentionMs}) must be at least replayWindowMs (${replayWindowMs}), as the server requires of a procedure`,
    );
  }
}

/** Options of {@link adminCommands}. */
export interface AdminCommandsOptions {
  /**
   * The serializer of the app's procedures, to check a COMPLETED resolution's body the way a
   * replay will read it. Defaults to `jsonSerializer` (JSON text of the output).
   */
  serializer?: ResultSerializer;
  /** The app's `keySecret`, to find a record by its key (`find` with `key`). Defaults to none. */
  keySecret?: string;
}

/** Operator functions over a recovery store; the CLI is a thin shell around these. */
export function adminCommands(store: RecoveryStore<unknown>, options: AdminCommandsOptions = {}) {
  return {
    /** A record by operation id, or null. */
    show: (operationId: string) => store.findByOperationId(operationId),
    /** The live record of a key, by the key itself or its hash. */
    find: async (key: { scope: string; procedure: string; key?: string; keyHash?: string }) => {
      if (key.key !== undefined && key.keyHash === undefined && !options.keySecret) {
        throw new AdminInputError(
          "find: a key is stored as an HMAC keyed with the app's keySecret: set IDEM_KEY_SECRET, or give --key-hash",
        );
      }
      const keyHash =
        key.keyHash ??
        (key.key !== undefined ? keyHashOf(key.key, options.keySecret!, key.scope) : undefined);
      if (!keyHash) throw new AdminInputError('find: give --key or --key-hash');
      return store.readRecovery({ scope: key.scope, procedure: key.procedure, keyHash });
    },
    /** Counts and lists records that need attention. */
    stuck: async (graceMs: number, limit: number) => ({
      report: await store.stuckReport({ graceMs }),
      records: await store.listStuck({ graceMs, limit }),
    }),
    /**
     * Resolves a record through the versioned state machine (fenced by the version read just now)
     * and writes an audit row. Returns false when the record changed in between: read it again.
     * The response is checked first against what a replay needs (see `checkResolution` of
     * `@idem/server`): a COMPLETED body is the procedure's output; a TERMINAL_FAILURE body is
     * `{ code, message }` with a 4xx code, and its status is the code's. The windows are the
     * procedure's (see {@link AdminResolution}), with no defaults. Anything else throws an
     * {@link AdminInputError} saying why, and nothing is written; so does an unknown operation id.
     */
    resolve: async (operationId: string, resolution: AdminResolution) => {
      const checked = checkResolution(
        {
          state: resolution.state,
          status: resolution.response?.status,
          body: resolution.response?.body,
        },
        options.serializer,
      );
      if (!checked.ok) throw new AdminInputError(checked.message);
      assertProcedureWindows(resolution);
      const record = await store.findByOperationId(operationId);
      if (!record) throw new AdminInputError(`no record with operation id ${operationId}`);
      const { actor, note } = resolution;
      let settled: Resolution;
      if (resolution.state === 'RETRYABLE_FAILURE') {
        settled = { state: resolution.state, retentionMs: resolution.retentionMs, actor, note };
      } else {
        const { state, replayWindowMs, retentionMs } = resolution;
        // checkResolution gives COMPLETED and TERMINAL_FAILURE their response.
        const response = { ...checked.response!, replayWindowMs, retentionMs };
        settled = { state, response, actor, note };
      }
      return store.resolve({ id: record.id, version: record.version }, settled);
    },
    /** The audit trail of a record. */
    audit: async (operationId: string) => {
      const record = await store.findByOperationId(operationId);
      return record ? store.listAudit(record.id) : [];
    },
    /** One bounded reaping pass. */
    reap: (limit: number) => store.reap({ limit }),
    /** Erases a scope's stored results and inputs, keeping de-duplication identifiers. */
    erase: (scope: string) => store.eraseScope(scope),
  };
}

export type AdminCommands = ReturnType<typeof adminCommands>;
