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
 * The caller's headers minus any spelling of idem's own: a second `Idempotency-Key` would make the
 * server refuse the request (400), so idem's values always win.
 */
export function withoutIdemHeaders(
  headers: HTTPHeaders,
): Record<string, string | string[] | undefined> {
  const entries: [string, string | string[] | undefined][] =
    Symbol.iterator in headers
      ? [...(headers as Iterable<[string, string]>)]
      : Object.entries(headers as Record<string, string | string[] | undefined>);
  return Object.fromEntries(entries.filter(([name]) => !IDEM_HEADER_NAMES.has(name.toLowerCase())));
}
