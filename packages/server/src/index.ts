export { createIdempotency } from './createIdempotency.js';
export type {
  CreateIdempotencyOptions,
  Idempotency,
  IdemProcedureBuilder,
  IdemProcedureOptions,
} from './createIdempotency.js';
export { idemContext } from './idemContext.js';
export type {
  IdemAdapterOptions,
  IdemContext,
  IdemContextSource,
  IdemHeaderSource,
  IdemRequest,
  IdemRequestInfo,
  IdemResponse,
} from './idemContext.js';
export { idemErrorFormatter } from './idemErrorFormatter.js';
export type {
  IdemErrorFormatterOptions,
  IdemRootErrorShape,
  MaskedError,
} from './idemErrorFormatter.js';
export { idemResponseMeta } from './idemResponseMeta.js';
export type { ExternalIdemExecution, IdemExecution, LocalIdemExecution } from './IdemExecution.js';
export { defaultCallTimeLimitMs } from './PhasedExecution.js';
export type {
  ExternalCallOptions,
  ExternalStep,
  LookupResult,
  PhaseTools,
} from './PhasedExecution.js';
export type { IdemEventBase, IdemServerEvent } from './IdemServerEvent.js';
export { jsonSerializer } from './ResultSerializer.js';
export { checkResolution } from './resolutionResponse.js';
export type { CheckedResolution, ResolutionRequest } from './resolutionResponse.js';
export type { ResultSerializer } from './ResultSerializer.js';
export type { ReplayStrategy } from './ReplayStrategy.js';
export { aesGcmCipher } from './aesGcmCipher.js';
export type { TextCipher } from './aesGcmCipher.js';
export type { AcceptedOperation } from './acceptedResponse.js';
export { operationStatusInput } from './operationStatusProcedure.js';
export { acceptedProcedures } from './workerPool.js';
export type { QueueOptions, WorkerPool, WorkerPoolOptions } from './workerPool.js';
export type { CancelOutcome, OperationStatus, OperationTools } from './operationTools.js';
export { externalProcedures } from './createCompleter.js';
export type { Completer, CompleterOptions, CompleterReport } from './createCompleter.js';
export { createReaper } from './createReaper.js';
export type { Reaper, ReaperOptions, ReaperReport } from './createReaper.js';
export type { PeriodicWorker } from './runPeriodically.js';
export { SERVER_METRICS } from './idemTelemetry.js';
export { canonicalJson, findNul, fingerprint } from './fingerprint.js';
export { hashIdempotencyKey, MIN_KEY_SECRET_LENGTH } from './keyHash.js';
export { classifyFailure } from './classifyFailure.js';
export { formatIdemError } from './formatIdemError.js';
export type { IdemErrorShape } from './formatIdemError.js';
export { IdemRequestError, isIdemRequestError } from './IdemRequestError.js';
export { retryUnsafe } from './retryUnsafe.js';
export { assertRouterDecided, auditRouter, describeAuditFindings } from './auditRouter.js';
export type { AuditedMutation, MisplacedIdempotency, RouterAudit } from './auditRouter.js';
export {
  idemCors,
  IDEM_CORS_ALLOW_HEADERS,
  IDEM_CORS_EXPOSE_HEADERS,
  type IdemCors,
  type IdemCorsOptions,
} from './idemCors.js';
