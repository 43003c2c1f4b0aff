import type { RecoveryRecord, RecoveryStore, Resolution, StoredResponse } from '@idem/contract';
import { DEFAULT_REPLAY_WINDOW_MS, DEFAULT_RETENTION_MS } from '@idem/contract';
import { checkResolution, hashIdempotencyKey, type ResultSerializer } from '@idem/server';

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
        throw new TypeError(
          "find: a key is stored as an HMAC keyed with the app's keySecret: set IDEM_KEY_SECRET, or give --key-hash",
        );
      }
      const keyHash =
        key.keyHash ??
        (key.key !== undefined ? keyHashOf(key.key, options.keySecret!, key.scope) : undefined);
      if (!keyHash) throw new TypeError('find: give --key or --key-hash');
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
     * `{ code, message }` with a 4xx code, and its status is the code's. Anything else throws a
     * TypeError saying why, and nothing is written.
     */
    resolve: async (
      operationId: string,
      resolution: Omit<Resolution, 'response'> & {
        response?: { status?: number; body: string };
      },
    ) => {
      const checked = checkResolution(
        {
          state: resolution.state,
          status: resolution.response?.status,
          body: resolution.response?.body,
        },
        options.serializer,
      );
      if (!checked.ok) throw new TypeError(checked.message);
      const record = await store.findByOperationId(operationId);
      if (!record) throw new Error(`no record with operation id ${operationId}`);
      const response: StoredResponse | null = checked.response && {
        ...checked.response,
        replayWindowMs: DEFAULT_REPLAY_WINDOW_MS,
        retentionMs: DEFAULT_RETENTION_MS,
      };
      const { response: _given, ...rest } = resolution;
      return store.resolve(
        { id: record.id, version: record.version },
        { ...rest, ...(response ? { response } : {}) },
      );
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
