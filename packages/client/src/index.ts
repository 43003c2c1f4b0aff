export { idemLink, IDEM_LINK_DEFAULTS } from './link/idemLink.js';
export type { IdemLinkOptions } from './link/idemLink.js';

export { withIdempotencyKey, IDEMPOTENCY_KEY_CONTEXT } from './keys/withIdempotencyKey.js';
export type {
  IdempotencyKeyFunction,
  IdempotentErrorShape,
  IdempotentInput,
  IdempotentPath,
  IdempotentProcedureOptions,
  IdempotentProcedures,
  IsIdempotentMutation,
  MisplacedIdemPath,
  NotIdempotentPath,
  ProcedureAtPath,
} from './keys/IdempotentProcedures.js';

export { idemFetch } from './link/idemFetch.js';
export type { IdemFetch } from './link/idemFetch.js';

export {
  fullJitter,
  DEFAULT_BACKOFF_BASE_MS,
  DEFAULT_BACKOFF_CAP_MS,
} from './retry/backoff/fullJitter.js';
export type { FullJitterOptions } from './retry/backoff/fullJitter.js';
export { decorrelatedJitter } from './retry/backoff/decorrelatedJitter.js';
export type { DecorrelatedJitterOptions } from './retry/backoff/decorrelatedJitter.js';
export type { Backoff, BackoffInput } from './retry/backoff/Backoff.js';

export {
  RetryBudget,
  DEFAULT_BUDGET_CAPACITY,
  DEFAULT_RETRY_COST,
  DEFAULT_SUCCESS_REFUND,
  DEFAULT_TIMEOUT_RETRY_COST,
} from './retry/RetryBudget.js';
export type { RetryBudgetOptions } from './retry/RetryBudget.js';

export { systemClock } from './retry/RetryClock.js';
export {
  isOperationReleasedError,
  OperationReleasedError,
  OperationWaitTimeoutError,
  waitForOperation,
} from './operations/waitForOperation.js';
export type { WaitForOperationOptions } from './operations/waitForOperation.js';
export type { RetryClock } from './retry/RetryClock.js';

export { classifyFailure } from './retry/classifyFailure.js';
export type { Failure, FailureKind } from './types/Failure.js';
export { decideRetry } from './retry/decideRetry.js';
export type { NoRetryReason, OperationKind, RetryDecision } from './types/RetryDecision.js';

export type {
  GiveUpReason,
  IdemCallInfo,
  IdemEvent,
  IdemFailureInfo,
  IdemGiveUpEvent,
  IdemLogger,
  IdemRetryEvent,
} from './telemetry/IdemEvent.js';

export {
  IdemClientError,
  isIdemClientError,
  findIdemClientError,
  IDEM_CLIENT_ERROR_CODES,
} from './errors/IdemClientError.js';
export type { IdemClientErrorCode, IdemGiveUpCode } from './errors/IdemClientError.js';
export { idemErrorOf } from './errors/idemErrorOf.js';
export { CLIENT_METRICS } from './telemetry/clientTelemetry.js';

export { intentKeys, memoryStorage, randomKey } from './keys/intentKeys.js';
export type { IntentKeys, IntentKeysOptions, IntentKeyStorage } from './keys/intentKeys.js';
