export {
  ATTEMPT_HEADER,
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_PROTECTED_HEADER,
  IDEMPOTENT_REPLAYED_HEADER,
  REQUEST_ID_HEADER,
  RETRY_AFTER_HEADER,
  TIMEOUT_HEADER,
} from './headers.js';
export {
  IDEMPOTENCY_KEY_MAX_LENGTH,
  isIdempotencyKey,
  parseIdempotencyKey,
} from './idempotencyKey.js';
export type { IdempotencyKey, IdempotencyKeyParseResult } from './idempotencyKey.js';
export { IDEM_REASON_TABLE, readIdemErrorData } from './reasons.js';
export type { IdemErrorData, IdemReason } from './reasons.js';
export { REAPABLE_STATES, recordStateSchema } from './recordState.js';
export type { RecordState } from './recordState.js';
export {
  DEFAULT_LEASE_MS,
  DEFAULT_LOCK_TIMEOUT_MS,
  DEFAULT_MAX_TAKEOVERS,
  DEFAULT_REPLAY_WINDOW_MS,
  DEFAULT_RETENTION_MS,
  FINGERPRINT_VERSION,
} from './defaults.js';
export { claimTimingSchema, idempotencyOptionsSchema } from './procedureMeta.js';
export type {
  ClaimTiming,
  ExecutionMode,
  FailurePolicy,
  IdemMeta,
  IdempotencyOptions,
} from './procedureMeta.js';
export type {
  ClaimInput,
  ClaimResult,
  Fence,
  IdempotencyRecord,
  IdempotencyStore,
  KeyAnswer,
  OutcomeRecord,
  RecordedAtCommit,
  StoredResponse,
} from './IdempotencyStore.js';
export type {
  IdemErrorShapeData,
  IdemErrorShapeMarker,
  RetrySafeErrorShapeMarker,
} from './idemErrorShape.js';
export { RECONCILIATION_REASONS } from './RecoveryStore.js';
export type {
  AuditEntry,
  ReconciliationReason,
  RecoveryRecord,
  RecoveryStore,
  Resolution,
  StuckReport,
} from './RecoveryStore.js';
