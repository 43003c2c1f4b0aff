import { TRPCError } from '@trpc/server';
import { getHTTPStatusCodeFromError } from '@trpc/server/http';
import { jsonSerializer } from '../replay/jsonSerializer.js';
import { type ResultSerializer } from '../types/ResultSerializer.js';
import { STORED_TAGS } from '../types/ReplayStrategy.js';
import { storedFailureSchema } from '../replay/storedFailure.js';

/** What an operator asks a record to be resolved to (the CLI's `--state`, `--status`, `--body`). */
export interface ResolutionRequest {
  state: 'COMPLETED' | 'TERMINAL_FAILURE' | 'RETRYABLE_FAILURE';
  /** The HTTP status retries will get. Optional: derived from the state (and the failure's code). */
  status?: number | undefined;
  /** What is stored for replay: the procedure's output, or `{ code, message }` for a failure. */
  body?: string | undefined;
}

/** The response to store, or why the resolution would corrupt the record. */
export type CheckedResolution =
  { ok: true; response: { status: number; body: string } | null } | { ok: false; message: string };

/**
 * Checks an operator's resolution against what a replay needs, before anything is written, so
 * that a resolved record replays as intended instead of answering 500 to every retry:
 *
 * - `COMPLETED`: the body is the procedure's output as `serializer` writes it (JSON by default:
 *   `{"chargeId":"ch_9"}`), replayed with status 200, the only status tRPC gives a success.
 * - `TERMINAL_FAILURE`: the body is `{ "code": "<tRPC error code>", "message": "..." }` with a
 *   client-error code (4xx, e.g. `NOT_FOUND`, `PRECONDITION_FAILED`); the replay answers the
 *   code's status (404, 412), so a `--status` that differs is refused rather than ignored.
 * - `RETRYABLE_FAILURE`: releases the key; it takes no status and no body.
 */
export function checkResolution(
  request: ResolutionRequest,
  serializer: ResultSerializer = jsonSerializer,
): CheckedResolution {
  const { state, status, body } = request;
  const refuse = (message: string): CheckedResolution => ({ ok: false, message });
  if (status !== undefined && (!Number.isInteger(status) || status < 100 || status > 599)) {
    return refuse(`--status must be an HTTP status (100-599), got ${status}`);
  }
  if (state === 'RETRYABLE_FAILURE') {
    if (status !== undefined || body !== undefined) {
      return refuse(
        'RETRYABLE_FAILURE releases the key (the next retry runs again): it takes no --status or --body',
      );
    }
    return { ok: true, response: null };
  }
  if (body === undefined) {
    return refuse(
      state === 'COMPLETED'
        ? '--body is required for COMPLETED: the procedure\'s output retries will get, e.g. \'{"chargeId":"ch_9"}\''
        : '--body is required for TERMINAL_FAILURE: the error retries will get, e.g. \'{"code":"NOT_FOUND","message":"no such charge"}\'',
    );
  }
  if (state === 'COMPLETED') {
    if (Object.values(STORED_TAGS).some((tag) => body.startsWith(tag))) {
      return refuse('--body must be the output itself, not a stored reference or sealed result');
    }
    try {
      serializer.deserialize(body);
    } catch (error) {
      return refuse(
        `--body for COMPLETED must be the procedure's output as its serializer writes it (JSON by default): ${(error as Error).message}`,
      );
    }
    if (status !== undefined && status !== 200) {
      return refuse(
        `a COMPLETED record replays with status 200 (tRPC answers every success 200): drop --status or give 200, not ${status}`,
      );
    }
    return { ok: true, response: { status: 200, body } };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    parsed = undefined;
  }
  const failure = storedFailureSchema.strict().safeParse(parsed);
  if (!failure.success) {
    return refuse(
      `--body for TERMINAL_FAILURE must be {"code":"<tRPC error code>","message":"..."} (e.g. {"code":"NOT_FOUND","message":"no such charge"}), got ${body.slice(0, 80)}`,
    );
  }
  const replayed = getHTTPStatusCodeFromError(
    new TRPCError({ code: failure.data.code, message: failure.data.message }),
  );
  if (replayed < 400 || replayed > 499) {
    return refuse(
      `a TERMINAL_FAILURE is a client error replayed to every retry: ${failure.data.code} answers ${replayed}; use a 4xx code (NOT_FOUND, PRECONDITION_FAILED, ...) or RETRYABLE_FAILURE`,
    );
  }
  if (status !== undefined && status !== replayed) {
    return refuse(
      `code ${failure.data.code} replays with status ${replayed}: drop --status or give ${replayed}, not ${status}`,
    );
  }
  return { ok: true, response: { status: replayed, body: JSON.stringify(failure.data) } };
}
