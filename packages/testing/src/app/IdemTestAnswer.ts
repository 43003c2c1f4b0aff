import { request as httpRequest } from 'node:http';
import {
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENT_REPLAYED_HEADER,
  readIdemErrorData,
  type IdemReason,
} from '@idem/contract';

/** An HTTP answer as a raw-HTTP caller sees it, with what idem said about it. */
export interface IdemTestAnswer {
  /** Which server of the run answered (its index). */
  server: number;
  status: number;
  /** Response headers, names in lower case (a repeated header joined with `, `). */
  headers: Record<string, string>;
  /** The body exactly as sent. */
  text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  json: unknown;
  /** `Idempotent-Replayed: true` was sent: a stored outcome, not a new execution. */
  replayed: boolean;
  /** idem's reason in the error's `data.idem` (e.g. `IDEMPOTENCY_KEY_REUSED`), or null. */
  reason: IdemReason | null;
  /** The tRPC error message, or null for a success. */
  message: string | null;
}

/** What one request sends besides its input. */
export interface IdemTestRequestOptions {
  /** The `Idempotency-Key`; several send the header several times. Defaults to none. */
  key?: string | readonly string[];
  /** Who calls (your `createContext` gets it). Defaults to none (null). */
  caller?: string | null;
  /** More request headers. Defaults to none. */
  headers?: Record<string, string>;
  /**
   * Milliseconds to wait for the whole answer before failing with a timeout. Defaults to the
   * run's `requestTimeoutMs` (10 000).
   */
  timeoutMs?: number;
}

/** The header that carries the caller to the kit's `createContext` wrapper. */
export const CALLER_HEADER = 'x-idem-test-caller';

/** Thrown when a request got no answer in time (e.g. a procedure deadlocked on PGlite). */
export class IdemTestTimeoutError extends Error {
  readonly isIdemTestTimeoutError = true;
  constructor(
    readonly path: string,
    readonly timeoutMs: number,
  ) {
    super(`POST /${path} got no answer within ${timeoutMs} ms`);
    this.name = 'IdemTestTimeoutError';
  }
}

/** @internal POSTs one tRPC mutation with exactly these headers (node:http, nothing merged). */
export function postMutation(
  server: { index: number; url: string },
  path: string,
  body: string,
  headers: Record<string, string | string[]>,
  timeoutMs: number,
): Promise<IdemTestAnswer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${server.url}/${path}`,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', connection: 'close', ...headers },
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          clearTimeout(timer);
          const text = Buffer.concat(chunks).toString('utf8');
          resolve(toAnswer(server.index, res.statusCode ?? 0, res.headers, text));
        });
      },
    );
    const timer = setTimeout(() => {
      req.destroy(new IdemTestTimeoutError(path, timeoutMs));
    }, timeoutMs);
    req.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    req.end(body);
  });
}

function toAnswer(
  server: number,
  status: number,
  raw: Record<string, string | string[] | undefined>,
  text: string,
): IdemTestAnswer {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const error = (json as { error?: { message?: unknown; data?: unknown } } | undefined)?.error;
  return {
    server,
    status,
    headers,
    text,
    json,
    replayed: headers[IDEMPOTENT_REPLAYED_HEADER.toLowerCase()] === 'true',
    reason: error ? (readIdemErrorData(error.data)?.reason ?? null) : null,
    message: error && typeof error.message === 'string' ? error.message : null,
  };
}

/** @internal The request headers of a mutation: key, caller, extra. */
export function requestHeaders(
  options: IdemTestRequestOptions,
  callerHeaders: ((caller: string) => Record<string, string>) | undefined,
): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = { ...options.headers };
  if (options.key !== undefined) {
    headers[IDEMPOTENCY_KEY_HEADER] =
      typeof options.key === 'string' ? options.key : [...options.key];
  }
  if (options.caller != null) {
    headers[CALLER_HEADER] = encodeURIComponent(options.caller);
    if (callerHeaders) Object.assign(headers, callerHeaders(options.caller));
  }
  return headers;
}
