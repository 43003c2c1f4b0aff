export { idemLink, IDEM_LINK_DEFAULTS } from './link/idemLink.js';
export type { IdemLinkOptions } from './link/idemLink.js';
export { idemFetch } from './link/idemFetch.js';
export type { IdemFetch } from './link/idemFetch.js';

export { withIdempotencyKey } from './keys/withIdempotencyKey.js';
export type {
  IdempotentErrorShape,
  IdempotentInput,
  IdempotentPath,
  IdempotentProcedureOptions,
  IdempotentProcedures,
  NotIdempotentPath,
} from './keys/IdempotentProcedures.js';
export type {
  NotRetrySafePath,
  RetrySafePath,
  RetrySafeProcedures,
} from './keys/RetrySafeProcedures.js';
export { intentKeys, memoryStorage } from './keys/intentKeys.js';
export type { IntentKeys, IntentKeysOptions, IntentKeyStorage } from './keys/intentKeys.js';

export { fullJitter } from './retry/backoff/fullJitter.js';
export type { FullJitterOptions } from './retry/backoff/fullJitter.js';
export { decorrelatedJitter } from './retry/backoff/decorrelatedJitter.js';
export type { DecorrelatedJitterOptions } from './retry/backoff/decorrelatedJitter.js';
export type { Backoff, BackoffInput } from './retry/backoff/Backoff.js';
export { RetryBudget, DEFAULT_BUDGET_CAPACITY, DEFAULT_RETRY_COST } from './retry/RetryBudget.js';
export type { RetryBudgetOptions } from './retry/RetryBudget.js';
export type { RetryClock } from './retry/RetryClock.js';

export {
  isOperationReleasedError,
  OperationReleasedError,
  OperationWaitTimeoutError,
  waitForOperation,
} from './operations/waitForOperation.js';
export type { WaitForOperationOptions } from './operations/waitForOperation.js';

export type { FailureKind } from './types/Failure.js';
export type { OperationKind } from './types/RetryDecision.js';
export type {
  GiveUpReason,
  IdemEvent,
  IdemGiveUpEvent,
  IdemLogger,
  IdemRetryEvent,
} from './telemetry/IdemEvent.js';
export { CLIENT_METRICS } from './telemetry/clientTelemetry.js';

export {
  IdemClientError,
  isIdemClientError,
  findIdemClientError,
  IDEM_CLIENT_ERROR_CODES,
} from './errors/IdemClientError.js';
export type { IdemClientErrorCode } from './errors/IdemClientError.js';
export { idemErrorOf } from './errors/idemErrorOf.js';
