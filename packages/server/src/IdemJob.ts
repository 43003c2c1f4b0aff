import type { TRPCError } from '@trpc/server';
import type {
  ClaimInput,
  ExecutionMode,
  FailurePolicy,
  IdempotencyStore,
  IdemReason,
} from '@idem/contract';
import type { IdemRequest } from './idemContext.js';
import type { IdemExecution } from './IdemExecution.js';
import type { IdemEventBase, IdemServerEvent } from './IdemServerEvent.js';
import type { ResultSerializer } from './ResultSerializer.js';

/** Per-procedure settings after defaults were applied (configured once per procedure). */
export interface ResolvedProcedureOptions {
  mode: ExecutionMode;
  replayWindowMs: number;
  retentionMs: number;
  leaseMs: number;
  lockTimeoutMs: number;
  failures: FailurePolicy;
  scopeSuffix: string | undefined;
}

/** Settings of one `createIdempotency` (configured once per app). */
export interface IdemRuntime {
  store: IdempotencyStore<unknown>;
  serializer: ResultSerializer;
  owner: string;
  inProgressRetryAfterMs: number;
  emit(event: IdemServerEvent): void;
}

/** What a middleware `next()` resolves to; idem passes it through or builds one for a replay. */
export type NextResult =
  | { ok: true; data: unknown; marker: unknown; ctx?: unknown }
  | { ok: false; error: TRPCError; marker: unknown };

/** One request on an idempotent procedure (per request). */
export interface IdemJob {
  runtime: IdemRuntime;
  options: ResolvedProcedureOptions;
  request: IdemRequest;
  claim: ClaimInput;
  /** The parsed input: replays of stored failures compare against it. */
  input: unknown;
  execution: Omit<IdemExecution, 'operationId' | 'executions'>;
  event: Omit<IdemEventBase, 'operationId'>;
  /** Runs the rest of the procedure with `ctx.idem` set. */
  next(idem: object): Promise<NextResult>;
  /** Records a refusal and returns the error to throw. */
  reject(
    reason: IdemReason,
    message: string,
    extra?: { retryAfterMs?: number; operationId?: string },
  ): TRPCError;
}
