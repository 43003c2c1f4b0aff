import { createHash } from 'node:crypto';
import type { RecoveryRecord, RecoveryStore, Resolution, StoredResponse } from '@idem/contract';
import { DEFAULT_REPLAY_WINDOW_MS, DEFAULT_RETENTION_MS } from '@idem/contract';

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

/** SHA-256 (hex) of a key, as the store keeps it. */
export function keyHashOf(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** Operator functions over a recovery store; the CLI is a thin shell around these. */
export function adminCommands(store: RecoveryStore<unknown>) {
  return {
    /** A record by operation id, or null. */
    show: (operationId: string) => store.findByOperationId(operationId),
    /** The live record of a key, by the key itself or its hash. */
    find: (key: { scope: string; procedure: string; key?: string; keyHash?: string }) => {
      const keyHash = key.keyHash ?? (key.key !== undefined ? keyHashOf(key.key) : undefined);
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
     */
    resolve: async (
      operationId: string,
      resolution: Omit<Resolution, 'response'> & {
        response?: Omit<StoredResponse, 'replayWindowMs' | 'retentionMs'>;
      },
    ) => {
      const record = await store.findByOperationId(operationId);
      if (!record) throw new Error(`no record with operation id ${operationId}`);
      const response = resolution.response && {
        ...resolution.response,
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
