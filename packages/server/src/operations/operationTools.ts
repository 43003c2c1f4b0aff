import { TRPCError } from '@trpc/server';
import type { RecordState, RecoveryRecord, RecoveryStore } from '@idem/contract';
import type { IdemRuntime } from '../types/IdemJob.js';
import { STORED_TAGS } from '../types/ReplayStrategy.js';
import { serializeFailure, storedFailureSchema } from '../replay/storedFailure.js';

/** What a caller may learn about one of its own operations. */
export interface OperationStatus {
  operationId: string;
  procedure: string;
  state: RecordState;
  /** The output, once COMPLETED (absent for reference, secret and erased results). */
  result?: unknown;
  /** The stored failure, once TERMINAL_FAILURE (a cancelled operation included). */
  error?: { code: string; message: string };
}

/** The answer of {@link OperationTools.cancel}. */
export type CancelOutcome =
  /** Stopped before any irreversible step; its worker's next step is refused. */
  | 'cancelled'
  /** An external call may already have happened: the work goes on to its end. */
  | 'irreversible'
  /** It had already ended (completed, failed, cancelled) or awaits reconciliation. */
  | 'finished'
  /** No such operation in the caller's scope. */
  | 'not-found';

/** Status and cancellation of operations, for the caller that owns them (per app). */
export interface OperationTools<TContext> {
  /** The operation, if it belongs to the caller's scope; null otherwise (never another caller's). */
  operationStatus(ctx: TContext, operationId: string): Promise<OperationStatus | null>;
  /**
   * Cancels an operation through the versioned state machine. Promised only while no irreversible
   * step (external call) has started. A client that disconnects has NOT cancelled anything: only
   * this call cancels.
   */
  cancel(ctx: TContext, operationId: string): Promise<CancelOutcome>;
}

export function createOperationTools<TContext>(
  runtime: IdemRuntime,
  scopesOf: (ctx: TContext) => Promise<string[]>,
): OperationTools<TContext> {
  const store = () => runtime.store;

  async function find(ctx: TContext, operationId: string): Promise<RecoveryRecord | null> {
    if (!/^[0-9a-f-]{36}$/i.test(operationId)) return null;
    const record = await store().findByOperationId(operationId);
    if (!record) return null;
    return (await scopesOf(ctx)).includes(record.scope) ? record : null;
  }

  return {
    async operationStatus(ctx, operationId) {
      const record = await find(ctx, operationId);
      if (!record) return null;
      const status: OperationStatus = {
        operationId,
        procedure: record.procedure,
        state: record.state,
      };
      const body = record.responseBody;
      if (
        record.state === 'COMPLETED' &&
        body !== null &&
        !Object.values(STORED_TAGS).some((t) => body.startsWith(t))
      ) {
        status.result = runtime.serializer.deserialize(body);
      }
      if (record.state === 'TERMINAL_FAILURE' && body !== null) {
        status.error = storedFailureSchema.parse(JSON.parse(body));
      }
      return status;
    },

    async cancel(ctx, operationId) {
      for (let round = 0; round < 3; round++) {
        const record = await find(ctx, operationId);
        if (!record) return 'not-found';
        if (record.state !== 'IN_PROGRESS' && record.state !== 'PENDING') return 'finished';
        const cancelled = new TRPCError({
          code: 'CLIENT_CLOSED_REQUEST',
          message: 'the operation was cancelled',
        });
        const outcome = await store().cancel(
          { id: record.id, version: record.version },
          {
            status: 499,
            body: serializeFailure(cancelled),
            // The procedure's own windows, as if its worker had stored the failure.
            ...runtime.windows.of(record.procedure),
          },
        );
        if (outcome !== 'stale') return outcome;
        // The record changed under us (a takeover): read it again and decide again.
      }
      return 'finished';
    },
  };
}
