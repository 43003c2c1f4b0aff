import type { TRPCError } from '@trpc/server';
import type {
  ClaimInput,
  ClaimTiming,
  ExecutionMode,
  FailurePolicy,
  RecoveryRecord,
  RecoveryStore,
} from '@idem/contract';
import type { IdemRequest } from './IdemRequest.js';
import type { IdemExecution } from './IdemExecution.js';
import type { IdemEventBase, IdemServerEvent } from './IdemServerEvent.js';
import type { KeyRequirement } from './options.js';
import type { ReplayStrategy } from './ReplayStrategy.js';
import type { ResultSerializer } from './ResultSerializer.js';
import type { TextCipher } from './TextCipher.js';
import type { IdemTelemetry } from './IdemTelemetry.js';
import type { ProcedureWindowsByPath } from './ProcedureWindows.js';

/** Per-procedure settings after defaults were applied (configured once per procedure). */
export interface ResolvedProcedureOptions {
  mode: ExecutionMode;
  replayWindowMs: number;
  retentionMs: number;
  leaseMs: number;
  lockTimeoutMs: number;
  /** When a local-mode request takes its key; always `first` in external mode. */
  claim: ClaimTiming;
  failures: FailurePolicy;
  scopeSuffix: string | undefined;
  respond: 'result' | 'accepted';
  replay: ReplayStrategy;
  /** Whether a call must carry a key (the procedure's `keys`, else the app's). */
  keys: KeyRequirement;
}

/** Settings of one `createIdempotency` (configured once per app). */
export interface IdemRuntime {
  store: RecoveryStore<unknown>;
  serializer: ResultSerializer;
  owner: string;
  inProgressRetryAfterMs: number;
  /** The poison cap of takeovers (claims and the completer). */
  maxTakeovers: number;
  inputCipher: TextCipher | null;
  telemetry: IdemTelemetry;
  /** Accepted work is queued (PENDING) for a worker pool when set; null: it starts at once. */
  queue: { maxDepth: number; retryAfterMs: number } | null;
  /** Paths of accepted procedures seen (requests, worker pools): the queue's depth counts them. */
  acceptedPaths: Set<string>;
  /**
   * Keys a local-mode request of this process is running at commit, by scope, procedure and key
   * hash: a duplicate waits for it (executeAtCommit.ts) instead of running its handler too.
   */
  inFlight: Map<string, Promise<unknown>>;
  /** The secret key hashes are keyed with, and the previous ones checked on claim. */
  keySecrets: { current: string; previous: readonly string[] };
  /** Each procedure's replay window and retention, for writes outside a request (cancel). */
  windows: ProcedureWindowsByPath;
  /**
   * The address a 202 of accepted work gives as its `Location`, from `createIdempotency`'s
   * `statusLocation`; null without one (an accepted procedure is then refused at start-up).
   */
  statusLocation: ((operationId: string) => string) | null;
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
  /** The claim of the request; its `operationId` is always set (prepareJob). */
  claim: ClaimInput & { operationId: string };
  /** The parsed input, fingerprinted and (external mode) stored for the completer. */
  input: unknown;
  /** The request's context (after authentication): reference replays rebuild as this caller. */
  ctx: unknown;
  /** Set when the completer resumes a record it took over: no claim, the record is ours. */
  resume: RecoveryRecord | null;
  execution: Omit<IdemExecution, 'operationId' | 'executions'>;
  event: Omit<IdemEventBase, 'operationId'>;
  /** Runs the rest of the procedure with `ctx.idem` set. */
  next(idem: object): Promise<NextResult>;
}

/** What idem's middleware hands to the per-request code (per request). */
export interface IdemMiddlewareCall<TContext, TIdem> {
  ctx: TContext;
  path: string;
  type: string;
  input: unknown;
  next: (idem: TIdem) => Promise<NextResult>;
}
