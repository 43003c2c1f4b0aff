export { createIdempotency } from './createIdempotency.js';
export type {
  CreateIdempotencyOptions,
  Idempotency,
  IdemProcedureBuilder,
} from './createIdempotency.js';
export { idemContext } from './idemContext.js';
export type { IdemContext, IdemHeaderSource, IdemRequest } from './idemContext.js';
export { idemResponseMeta } from './idemResponseMeta.js';
export type { IdemExecution, LocalIdemExecution } from './IdemExecution.js';
export type { IdemEventBase, IdemServerEvent } from './IdemServerEvent.js';
export { jsonSerializer } from './ResultSerializer.js';
export type { ResultSerializer } from './ResultSerializer.js';
export { canonicalJson, fingerprint, hashIdempotencyKey } from './fingerprint.js';
export { classifyFailure } from './classifyFailure.js';
export { formatIdemError } from './formatIdemError.js';
export type { IdemErrorShape } from './formatIdemError.js';
export { IdemRequestError, isIdemRequestError } from './IdemRequestError.js';
export { retryUnsafe } from './retryUnsafe.js';
export { assertRouterDecided, auditRouter } from './auditRouter.js';
export type { AuditedMutation, RouterAudit } from './auditRouter.js';
