export { idemLink, IDEM_LINK_DEFAULTS } from './idemLink.js';
export type { IdemLinkOptions } from './idemLink.js';

export { withIdempotencyKey, IDEMPOTENCY_KEY_CONTEXT } from './withIdempotencyKey.js';
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
} from './IdempotentProcedures.js';

export { idemFetch } from './idemFetch.js';
export type { IdemFetch } from './idemFetch.js';

export {
  fullJitter,
  DEFAULT_BACKOFF_BASE_MS,
  DEFAULT_BACKOFF_CAP_MS,
} from './backoff/fullJitter.js';
export type { FullJitterOptions } from './backoff/fullJitter.js';
export { decorrelatedJitter } from './backoff/decorrelatedJitter.js';
export type { DecorrelatedJitterOptions } from './backoff/decorrelatedJitter.js';
export type { Backoff, BackoffInput } from './backoff/Backoff.js';

export {
  RetryBudget,
  DEFAULT_BUDGET_CAPACITY,
  DEFAULT_RETRY_COST,
  DEFAULT_SUCCESS_REFUND,
  DEFAULT_TIMEOUT_RETRY_COST,
} from './RetryBudget.js';
export type { RetryBudgetOptions } from './RetryBudget.js';

export { systemClock } from './RetryClock.js';
export {
  isOperationReleasedError,
  OperationReleasedError,
  OperationWaitTimeoutError,
  waitForOperation,
} from './waitForOperation.js';
export type { WaitForOperationOptions } from './waitForOperation.js';
export type { RetryClock } from './RetryClock.js';

export { classifyFailure } from './classifyFailure.js';
export type { Failure, FailureKind } from './classifyFailure.js';
export { decideRetry } from './decideRetry.js';
export type { NoRetryReason, OperationKind, RetryDecision } from './decideRetry.js';

export type {
  GiveUpReason,
  IdemCallInfo,
  IdemEvent,
  IdemFailureInfo,
  IdemGiveUpEvent,
  IdemLogger,
  IdemRetryEvent,
} from './IdemEvent.js';

export {
  IdemClientError,
  isIdemClientError,
  findIdemClientError,
  IDEM_CLIENT_ERROR_CODES,
} from './IdemClientError.js';
export type { IdemClientErrorCode, IdemGiveUpCode } from './IdemClientError.js';
export { idemErrorOf } from './idemErrorOf.js';
export { CLIENT_METRICS } from './clientTelemetry.js';

export { intentKeys, memoryStorage, randomKey } from './intentKeys.js';
export type { IntentKeys, IntentKeysOptions, IntentKeyStorage } from './intentKeys.js';
