/// <reference types="node" />
/**
 * The front door: what application code calls or names in its types. Operator tools (the router
 * audit, resolutions, key hashing for idem-admin) are behind `@idem/server/operator`.
 */
export { createIdempotency } from './createIdempotency.js';
export type {
  CreateIdempotencyOptions,
  IdemProcedureOptions,
  KeyRequirement,
} from './types/options.js';
export type { Idempotency, IdemProcedureBuilder } from './createIdempotency.js';
export { idemContext } from './request/idemContext.js';
export type {
  IdemAdapterOptions,
  IdemContextSource,
  IdemHeaderSource,
  IdemRequestInfo,
} from './request/idemContext.js';
export type { IdemContext, IdemRequest, IdemResponse } from './types/IdemRequest.js';
export { idemErrorFormatter } from './errors/idemErrorFormatter.js';
export type {
  IdemErrorFormatterOptions,
  IdemRootErrorShape,
  MaskedError,
} from './errors/idemErrorFormatter.js';
export { idemResponseMeta } from './request/idemResponseMeta.js';
export type {
  ExternalIdemExecution,
  IdemExecution,
  LocalIdemExecution,
} from './types/IdemExecution.js';
export type {
  ExternalCallOptions,
  ExternalStep,
  LookupResult,
  PhaseTools,
} from './types/IdemExecution.js';
export type { IdemEventBase, IdemServerEvent } from './types/IdemServerEvent.js';
export { jsonSerializer } from './replay/jsonSerializer.js';
export type { ResultSerializer } from './types/ResultSerializer.js';
export type { ReplayStrategy } from './types/ReplayStrategy.js';
export { aesGcmCipher } from './replay/aesGcmCipher.js';
export type { TextCipher } from './types/TextCipher.js';
export type { AcceptedOperation } from './replay/acceptedResponse.js';
export type {
  CancelOutcome,
  OperationStatus,
  OperationTools,
} from './operations/operationTools.js';
export type { Completer, CompleterOptions, CompleterReport } from './workers/createCompleter.js';
export { createReaper } from './workers/createReaper.js';
export type { Reaper, ReaperOptions, ReaperReport } from './workers/createReaper.js';
export type { PeriodicWorker } from './workers/runPeriodically.js';
export { SERVER_METRICS } from './telemetry/idemTelemetry.js';
export type { IdemErrorShape } from './errors/formatIdemError.js';
export { IdemRequestError, isIdemRequestError } from './errors/IdemRequestError.js';
export {
  isLostOwnershipError,
  isOutcomeUnknownError,
  LostOwnershipError,
  OutcomeUnknownError,
} from './errors/idemErrors.js';
export { retryUnsafe } from './trpc/retryUnsafe.js';
export type { RetryUnsafeProcedureBuilder } from './trpc/retryUnsafe.js';
export { retrySafe } from './trpc/retrySafe.js';
export type { RetrySafeErrorShape, RetrySafeProcedureBuilder } from './trpc/retrySafe.js';
export { assertRouterDecided } from './trpc/auditRouter.js';
export { operationStatusInput } from './operations/operationStatusProcedure.js';
export type { QueueOptions } from './types/options.js';
export type { WorkerPool, WorkerPoolOptions } from './workers/workerPool.js';
export {
  idemCors,
  IDEM_CORS_ALLOW_HEADERS,
  IDEM_CORS_EXPOSE_HEADERS,
  type IdemCors,
  type IdemCorsOptions,
} from './trpc/idemCors.js';
