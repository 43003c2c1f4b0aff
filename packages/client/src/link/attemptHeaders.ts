import {
  ATTEMPT_HEADER,
  IDEMPOTENCY_KEY_HEADER,
  REQUEST_ID_HEADER,
  TIMEOUT_HEADER,
} from '@idem/contract';
import type { HTTPHeaders } from '@trpc/client';

/** What one attempt of an idempotent mutation tells the server. */
export interface AttemptHeaderValues {
  idempotencyKey: string;
  requestId: string;
  attempt: number;
  remainingMs: number;
}

const IDEM_HEADER_NAMES = new Set(
  [IDEMPOTENCY_KEY_HEADER, REQUEST_ID_HEADER, ATTEMPT_HEADER, TIMEOUT_HEADER].map((name) =>
    name.toLowerCase(),
  ),
);

/**
 * The headers of one attempt: the call's key (the same on every attempt), a fresh request id, the
 * attempt number, and the milliseconds left of the caller's deadline.
 */
export function attemptHeaders(values: AttemptHeaderValues): Record<string, string> {
  return {
    [IDEMPOTENCY_KEY_HEADER]: values.idempotencyKey,
    [REQUEST_ID_HEADER]: values.requestId,
    [ATTEMPT_HEADER]: String(values.attempt),
    [TIMEOUT_HEADER]: String(Math.max(0, Math.floor(values.remainingMs))),
  };
}

/**
 * The caller's headers minus any spelling of idem's own, then `attempt`'s: a second
 * `Idempotency-Key` would make the server refuse the request (400), so idem's values always win.
 * One object, built in one pass: it runs once per attempt.
 */
export function withAttemptHeaders(
  headers: HTTPHeaders,
  attempt: Record<string, string> | undefined,
): Record<string, string | string[] | undefined> {
  const merged: Record<string, string | string[] | undefined> = {};
  if (Symbol.iterator in headers) {
    for (const [name, value] of headers as Iterable<[string, string]>) {
      if (!IDEM_HEADER_NAMES.has(name.toLowerCase())) merged[name] = value;
    }
  } else {
    const record = headers as Record<string, string | string[] | undefined>;
    for (const name of Object.keys(record)) {
      if (!IDEM_HEADER_NAMES.has(name.toLowerCase())) merged[name] = record[name];
    }
  }
  return attempt ? Object.assign(merged, attempt) : merged;
}
