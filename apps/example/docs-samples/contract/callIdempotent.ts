// The TypeScript retry loop of docs/contract.md, verbatim, run against the example server by
// apps/example/test/contract.test.ts.

/** The parts of a tRPC error body a retry loop reads. */
interface TrpcError {
  error: {
    message: string;
    data?: { code?: string; httpStatus?: number; idem?: { reason: string; retryAfterMs?: number } };
  };
}

const MAX_ATTEMPTS = 3; // counting the first
const BASE_MS = 500; // full jitter: sleep = random(0, min(CAP_MS, BASE_MS * 2 ** retry))
const CAP_MS = 10_000;
const ATTEMPT_TIMEOUT_MS = 10_000; // 2 to 3 times the procedure's p99
const DEADLINE_MS = 30_000; // every attempt and sleep together; never reset per attempt
const RETRY_STATUSES = new Set([429, 502, 503, 504]);

/** Thrown when the call fails for good: `status` 0 means no response arrived. */
export class CallFailed extends Error {
  constructor(
    readonly status: number,
    readonly body: TrpcError | null,
    readonly attempts: number,
  ) {
    super(
      `HTTP ${status || 'no response'} after ${attempts} attempt(s): ${body?.error.message ?? ''}`,
    );
  }
}

/**
 * Calls one idempotent procedure: `POST <api>/<path>` with `input` as the JSON body and the same
 * `key` on every attempt. Resolves with the output, and whether it was a replay.
 */
export async function callIdempotent<T>(
  api: string, // e.g. 'http://127.0.0.1:3000/trpc'
  token: string,
  path: string, // e.g. 'payments.create'
  input: unknown,
  key: string, // made ONCE per logical operation, before the first attempt
): Promise<{ data: T; replayed: boolean }> {
  const deadline = Date.now() + DEADLINE_MS;
  for (let attempt = 1; ; attempt++) {
    const left = deadline - Date.now();
    let status = 0; // 0: no response (refused, reset, timed out): retry with the same key
    let body: TrpcError | null = null;
    let waitMs = 0;
    try {
      const response = await fetch(`${api}/${path}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${token}`,
          'idempotency-key': key,
          'idempotency-attempt': String(attempt), // optional, for the server's logs
          'x-request-id': crypto.randomUUID(), // optional: new on every attempt, unlike the key
        },
        body: JSON.stringify(input),
        signal: AbortSignal.timeout(Math.min(ATTEMPT_TIMEOUT_MS, left)),
      });
      status = response.status;
      const json: unknown = await response.json().catch(() => null); // a proxy's HTML page
      if (response.ok) {
        const replayed = response.headers.get('idempotent-replayed') === 'true';
        return { data: (json as { result: { data: T } }).result.data, replayed };
      }
      body =
        json !== null && typeof json === 'object' && 'error' in json ? (json as TrpcError) : null;
      const seconds = Number(response.headers.get('retry-after'));
      waitMs =
        body?.error.data?.idem?.retryAfterMs ?? (Number.isFinite(seconds) ? seconds * 1000 : 0);
    } catch {
      // No response. The request may or may not have run: only the same key makes a retry safe.
    }
    const reason = body?.error.data?.idem?.reason;
    const retryable =
      status === 0 ||
      RETRY_STATUSES.has(status) ||
      (status === 409 && reason === 'IDEMPOTENCY_REQUEST_IN_PROGRESS');
    if (!retryable || attempt >= MAX_ATTEMPTS) throw new CallFailed(status, body, attempt);
    const ceiling = Math.min(CAP_MS, BASE_MS * 2 ** (attempt - 1));
    const sleepMs = Math.max(waitMs, Math.floor(Math.random() * ceiling));
    if (Date.now() + sleepMs >= deadline) throw new CallFailed(status, body, attempt);
    await new Promise((resolve) => setTimeout(resolve, sleepMs));
  }
}
