import { IDEM_REASON_TABLE, type IdemReason } from '@idem/contract';
import { TRPCClientError } from '@trpc/client';
import { describe, expect, it } from 'vitest';
import type { FailureKind } from '../types/Failure.js';
import type { OperationKind } from '../types/RetryDecision.js';
import { classifyFailure } from './classifyFailure.js';
import { decideRetry } from './decideRetry.js';
import { IdemClientError } from '../errors/IdemClientError.js';

/** A server error as tRPC's HTTP links deliver it: shape, data, and the response in `meta`. */
function serverError(status: number, reason?: IdemReason, headers: Record<string, string> = {}) {
  const data: Record<string, unknown> = { code: 'X', httpStatus: status };
  if (reason)
    data['idem'] = { reason, ...(reason.endsWith('PROGRESS') ? { retryAfterMs: 1500 } : {}) };
  return new TRPCClientError('server said no', {
    result: { error: { code: -32000, message: 'server said no', data } as never },
    meta: { response: new Response(null, { status, headers }) },
  });
}

function networkError(code: string | undefined, message = 'fetch failed') {
  const cause = code ? Object.assign(new Error(code), { code }) : undefined;
  return TRPCClientError.from(new TypeError(message, { cause }));
}

const proxyPage = (status: number) =>
  TRPCClientError.from(
    new IdemClientError('HTTP_ERROR', `HTTP ${status}`, { status, retryAfterMs: 2000 }),
  );

type Verdict = 'retry' | 'not-retryable' | 'unsafe';
const R: Verdict = 'retry';
const N: Verdict = 'not-retryable';
const U: Verdict = 'unsafe';

// [case, error, kind, idempotent mutation, mutation without key, query]
const table: [string, () => unknown, FailureKind, Verdict, Verdict, Verdict][] = [
  ['429 Too Many Requests', () => serverError(429), 'http-429', R, U, R],
  ['500 Internal Server Error', () => serverError(500), 'http-500', N, N, N],
  ['501 Not Implemented', () => serverError(501), 'server-error', N, N, N],
  ['502 Bad Gateway', () => serverError(502), 'http-502', R, U, R],
  ['503 Service Unavailable', () => serverError(503), 'http-503', R, U, R],
  ['504 Gateway Timeout', () => serverError(504), 'http-504', R, U, R],
  ['HTML 502 page from a proxy', () => proxyPage(502), 'http-502', R, U, R],
  ['HTML 503 page from a proxy', () => proxyPage(503), 'http-503', R, U, R],
  ['HTML 404 page from a proxy', () => proxyPage(404), 'client-error', N, N, N],
  [
    '409 in progress',
    () => serverError(409, 'IDEMPOTENCY_REQUEST_IN_PROGRESS'),
    'in-progress',
    R,
    U,
    R,
  ],
  ['409 without an idem reason', () => serverError(409), 'client-error', N, N, N],
  [
    '409 outcome unknown',
    () => serverError(409, 'IDEMPOTENCY_OUTCOME_UNKNOWN'),
    'idem-refused',
    N,
    N,
    N,
  ],
  [
    '409 replay unavailable',
    () => serverError(409, 'IDEMPOTENCY_REPLAY_UNAVAILABLE'),
    'idem-refused',
    N,
    N,
    N,
  ],
  [
    '404 resource gone',
    () => serverError(404, 'IDEMPOTENCY_RESOURCE_GONE'),
    'idem-refused',
    N,
    N,
    N,
  ],
  ['422 key reused', () => serverError(422, 'IDEMPOTENCY_KEY_REUSED'), 'key-reused', N, N, N],
  ['422 without an idem reason', () => serverError(422), 'client-error', N, N, N],
  ['400 key missing', () => serverError(400, 'IDEMPOTENCY_KEY_MISSING'), 'key-rejected', N, N, N],
  ['400 key invalid', () => serverError(400, 'IDEMPOTENCY_KEY_INVALID'), 'key-rejected', N, N, N],
  ['400 bad input', () => serverError(400), 'client-error', N, N, N],
  ['401 unauthorized', () => serverError(401), 'auth', N, N, N],
  ['403 forbidden', () => serverError(403), 'auth', N, N, N],
  ['404 not found', () => serverError(404), 'client-error', N, N, N],
  ['408 request timeout', () => serverError(408), 'client-error', N, N, N],
  [
    '503 store unavailable',
    () => serverError(503, 'IDEMPOTENCY_STORE_UNAVAILABLE'),
    'http-503',
    R,
    U,
    R,
  ],
  ['connection refused', () => networkError('ECONNREFUSED'), 'connection-refused', R, R, R],
  ['DNS failure', () => networkError('ENOTFOUND'), 'connection-refused', R, R, R],
  ['connect timeout', () => networkError('UND_ERR_CONNECT_TIMEOUT'), 'connection-refused', R, R, R],
  ['connection reset', () => networkError('ECONNRESET'), 'connection-lost', R, U, R],
  ['socket closed mid-response', () => networkError('UND_ERR_SOCKET'), 'connection-lost', R, U, R],
  [
    'browser "Failed to fetch"',
    () => networkError(undefined, 'Failed to fetch'),
    'connection-lost',
    R,
    U,
    R,
  ],
  [
    'per-attempt timeout',
    () => TRPCClientError.from(new IdemClientError('ATTEMPT_TIMEOUT', 'timed out')),
    'timeout',
    R,
    U,
    R,
  ],
  [
    'a bug (TypeError)',
    () => TRPCClientError.from(new TypeError('x is undefined')),
    'unknown',
    N,
    N,
    N,
  ],
  [
    'unreadable body without idemFetch',
    () => TRPCClientError.from(new SyntaxError('Unexpected token <')),
    'bad-response',
    N,
    N,
    N,
  ],
];

describe('classifyFailure and decideRetry', () => {
  it.each(table)('%s', (_name, makeError, kind, idempotent, mutation, query) => {
    const failure = classifyFailure(makeError(), 0);
    expect(failure.kind).toBe(kind);
    const verdicts = (['idempotent-mutation', 'mutation', 'query'] as OperationKind[]).map((op) => {
      const decision = decideRetry(failure, op, { retryOn500: false });
      return decision.retry ? 'retry' : decision.because;
    });
    expect(verdicts).toEqual([idempotent, mutation, query]);
    // A mutation safe to retry by nature is retried on the same failures as an idempotent one.
    const retrySafe = decideRetry(failure, 'retry-safe-mutation', { retryOn500: false });
    expect(retrySafe.retry ? 'retry' : retrySafe.because).toBe(idempotent);
  });

  it('retries 500 only when configured, and never a mutation without a key', () => {
    const failure = classifyFailure(serverError(500), 0);
    expect(decideRetry(failure, 'idempotent-mutation', { retryOn500: true })).toEqual({
      retry: true,
    });
    expect(decideRetry(failure, 'query', { retryOn500: true })).toEqual({ retry: true });
    expect(decideRetry(failure, 'mutation', { retryOn500: true })).toEqual({
      retry: false,
      because: 'unsafe',
    });
  });

  it('agrees with the contract: a reason is retried exactly when the table says retryable', () => {
    for (const [reason, entry] of Object.entries(IDEM_REASON_TABLE)) {
      const failure = classifyFailure(serverError(entry.httpStatus, reason as IdemReason), 0);
      expect([
        reason,
        decideRetry(failure, 'idempotent-mutation', { retryOn500: true }).retry,
      ]).toEqual([reason, entry.retryable]);
    }
  });

  it('reads the wait from data.idem.retryAfterMs, else the Retry-After header', () => {
    expect(
      classifyFailure(serverError(409, 'IDEMPOTENCY_REQUEST_IN_PROGRESS'), 0).retryAfterMs,
    ).toBe(1500);
    expect(
      classifyFailure(serverError(429, undefined, { 'Retry-After': '3' }), 0).retryAfterMs,
    ).toBe(3000);
    expect(classifyFailure(proxyPage(503), 0).retryAfterMs).toBe(2000);
    expect(classifyFailure(serverError(503), 0).retryAfterMs).toBeUndefined();
  });

  it('knows a refused connection never reached the server', () => {
    expect(classifyFailure(networkError('ECONNREFUSED'), 0).mayHaveReachedServer).toBe(false);
    expect(classifyFailure(networkError('ECONNRESET'), 0).mayHaveReachedServer).toBe(true);
  });
});
