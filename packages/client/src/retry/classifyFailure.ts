import { readIdemErrorData, RETRY_AFTER_HEADER, type IdemReason } from '@idem/contract';
import { findIdemClientError } from '../errors/IdemClientError.js';
import type { Failure, FailureKind } from '../types/Failure.js';
import { parseRetryAfter } from './parseRetryAfter.js';

/** Connection errors that mean no request bytes were sent. */
const NEVER_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_CONNECT_TIMEOUT',
]);
/** Connection errors after the connection was made: the request may have arrived. */
const CONNECTION_LOST_CODES = new Set([
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_ABORTED',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

const REASON_KINDS: Record<IdemReason, FailureKind> = {
  IDEMPOTENCY_REQUEST_IN_PROGRESS: 'in-progress',
  IDEMPOTENCY_STORE_UNAVAILABLE: 'http-503',
  IDEMPOTENCY_OUTCOME_LOOKUP_PENDING: 'http-503',
  IDEMPOTENCY_QUEUE_FULL: 'http-503',
  IDEMPOTENCY_KEY_REUSED: 'key-reused',
  IDEMPOTENCY_KEY_MISSING: 'key-rejected',
  IDEMPOTENCY_KEY_INVALID: 'key-rejected',
  IDEMPOTENCY_INPUT_UNSTORABLE: 'idem-refused',
  IDEMPOTENCY_BATCH_REFUSED: 'idem-refused',
  IDEMPOTENCY_OUTCOME_UNKNOWN: 'idem-refused',
  IDEMPOTENCY_RESOURCE_GONE: 'idem-refused',
  IDEMPOTENCY_REPLAY_UNAVAILABLE: 'idem-refused',
};

/** Maps an HTTP status to a failure kind (without an idem reason). */
export function kindOfStatus(status: number): FailureKind {
  switch (status) {
    case 401:
    case 403:
      return 'auth';
    case 429:
      return 'http-429';
    case 500:
      return 'http-500';
    case 502:
      return 'http-502';
    case 503:
      return 'http-503';
    case 504:
      return 'http-504';
  }
  if (status >= 400 && status < 500) return 'client-error';
  if (status >= 500 && status < 600) return 'server-error';
  return 'bad-response';
}

/**
 * Classifies the error of one attempt: a `TRPCClientError` from an HTTP link (server error JSON,
 * network failure), or idem's own timeout and non-tRPC-response errors, found in the cause chain.
 * `nowMs` dates an HTTP-date `Retry-After`.
 */
export function classifyFailure(error: unknown, nowMs: number): Failure {
  const idemError = findIdemClientError(error);
  if (idemError?.code === 'ATTEMPT_TIMEOUT') return { kind: 'timeout', mayHaveReachedServer: true };
  if (idemError?.code === 'HTTP_ERROR' && idemError.status !== undefined) {
    return withRetryAfter(
      {
        kind: kindOfStatus(idemError.status),
        status: idemError.status,
        mayHaveReachedServer: true,
      },
      idemError.retryAfterMs,
    );
  }

  const data = readProperty(error, 'data');
  const response = readProperty(readProperty(error, 'meta'), 'response');
  const status = statusOf(data, response);
  if (status !== undefined) {
    const idem = readIdemErrorData(data);
    const headerMs = parseRetryAfter(headerOf(response, RETRY_AFTER_HEADER), nowMs);
    const failure: Failure = {
      kind: idem ? REASON_KINDS[idem.reason] : kindOfStatus(status),
      status,
      mayHaveReachedServer: true,
    };
    if (idem) failure.reason = idem.reason;
    return withRetryAfter(failure, idem?.retryAfterMs ?? headerMs);
  }

  const code = findCode(error);
  if (code !== undefined && NEVER_SENT_CODES.has(code)) {
    return { kind: 'connection-refused', mayHaveReachedServer: false };
  }
  if ((code !== undefined && CONNECTION_LOST_CODES.has(code)) || hasFetchTypeError(error)) {
    return { kind: 'connection-lost', mayHaveReachedServer: true };
  }
  if (hasCause(error, (cause) => cause instanceof SyntaxError)) {
    return { kind: 'bad-response', mayHaveReachedServer: true };
  }
  return { kind: 'unknown', mayHaveReachedServer: true };
}

function withRetryAfter(failure: Failure, retryAfterMs: number | undefined): Failure {
  if (retryAfterMs !== undefined) failure.retryAfterMs = retryAfterMs;
  return failure;
}

function readProperty(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null
    ? (value as Record<string, unknown>)[key]
    : undefined;
}

/** `data.httpStatus` (per call, right inside a batch), else the response status unless 207. */
function statusOf(data: unknown, response: unknown): number | undefined {
  const fromData = readProperty(data, 'httpStatus');
  if (typeof fromData === 'number') return fromData;
  const fromResponse = readProperty(response, 'status');
  if (typeof fromResponse === 'number' && fromResponse !== 207 && fromResponse >= 400) {
    return fromResponse;
  }
  return undefined;
}

function headerOf(response: unknown, name: string): string | null {
  const headers = readProperty(response, 'headers');
  const get = readProperty(headers, 'get');
  return typeof get === 'function' ? (get.call(headers, name) as string | null) : null;
}

function causes(error: unknown): unknown[] {
  const chain: unknown[] = [];
  let current = error;
  for (let depth = 0; depth < 8 && typeof current === 'object' && current !== null; depth++) {
    chain.push(current);
    current = (current as { cause?: unknown }).cause;
  }
  return chain;
}

function findCode(error: unknown): string | undefined {
  for (const cause of causes(error)) {
    const code = readProperty(cause, 'code');
    if (typeof code === 'string') return code;
  }
  return undefined;
}

function hasCause(error: unknown, test: (cause: unknown) => boolean): boolean {
  return causes(error).some(test);
}

/**
 * A `fetch` that rejected without a response: undici's `fetch failed`, Chrome's `Failed to fetch`,
 * Firefox's `NetworkError when attempting to fetch resource`, Safari's `Load failed`. Any other
 * `TypeError` is a bug, and bugs are not retried.
 */
function hasFetchTypeError(error: unknown): boolean {
  return hasCause(
    error,
    (cause) => cause instanceof TypeError && /fetch|network|load failed/i.test(cause.message),
  );
}
