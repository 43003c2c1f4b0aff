import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Faults, FaultSwitches } from '../Faults.js';
import type { JsonLogger } from '../jsonLogger.js';
import type { StandInProcessor } from '../StandInProcessor.js';

/** The path of the fault switches. */
export const FAULT_CONTROL_PATH = '/dev/faults';

/**
 * The request header that carries the process's dev secret. Not CORS-safelisted: a page on
 * another origin can send it only after a preflight, which only the origins the API lists pass.
 */
export const DEV_SECRET_HEADER = 'X-Idem-Dev-Secret';

const DEV_SECRET = /^[0-9a-f]{64}$/;

/** A fresh dev secret: 32 random bytes in hex, made once per process at start-up. */
export function newDevSecret(): string {
  return randomBytes(32).toString('hex');
}

/** Throws unless `secret` looks like one {@link newDevSecret} makes (64 hex digits). */
export function assertDevSecret(secret: string, where: string): void {
  if (!DEV_SECRET.test(secret)) {
    throw new Error(
      `${where} must be the 64 hex digits the API printed at start-up (${DEV_SECRET_HEADER}: ...)`,
    );
  }
}

/** What `GET /dev/faults` answers, and `POST /dev/faults` accepts (any subset). */
export interface FaultState extends FaultSwitches {
  /** The processor answers slowly: {@link FaultControlOptions.slowLatencyMs} instead of normal. */
  slowProcessor: boolean;
}

/** What the fault switches act on (configured once per process). */
export interface FaultControlOptions {
  faults: Faults;
  processor: StandInProcessor;
  /** The processor's latency when it is not slow (`IDEM_EXAMPLE_PROCESSOR_LATENCY_MS`). */
  normalLatencyMs: number;
  /**
   * The processor's latency when slow: long enough to reload the page while a payment is in
   * flight, short enough to stay inside the charge's time limit (half the lease).
   */
  slowLatencyMs: number;
  log: JsonLogger;
  /** The process's dev secret ({@link newDevSecret}): every request must send it. */
  secret: string;
}

/**
 * `GET /dev/faults` (the switches now) and `POST /dev/faults` with a JSON body
 * `{ "dropNext": 1, "burst503": 2, "slowProcessor": true }` (any subset; counts 0 to 100): the
 * checkout page's fault switches, on the example's own fault injection. Served only with
 * `IDEM_EXAMPLE_DEV_CONTROLS=1`. A connect-style middleware: other paths go on to `next`.
 *
 * Every request sends the process's secret in `X-Idem-Dev-Secret`, and a POST is
 * `Content-Type: application/json`; anything else is a 403 that changes nothing. Both force a
 * page on another origin through a preflight (a form or a `text/plain` fetch needs none), and a
 * page that cannot read the secret cannot send it.
 */
export function faultControl(options: FaultControlOptions) {
  const { faults, processor } = options;
  assertDevSecret(options.secret, 'faultControl: secret');
  const secretHash = sha256(options.secret);
  const state = (): FaultState => ({
    ...faults.switches,
    slowProcessor: processor.latencyMs === options.slowLatencyMs,
  });
  return (req: IncomingMessage, res: ServerResponse, next: () => void): void => {
    if (new URL(req.url ?? '/', 'http://x').pathname !== FAULT_CONTROL_PATH) return next();
    const refused = refusal(req, secretHash);
    if (refused) {
      req.resume();
      return json(res, 403, { error: refused });
    }
    if (req.method === 'GET') return json(res, 200, state());
    if (req.method !== 'POST') return json(res, 405, { error: 'GET or POST' });
    void readBody(req).then((text) => {
      const change = parseChange(text);
      if (typeof change === 'string') return json(res, 400, { error: change });
      const { slowProcessor, ...switches } = change;
      faults.switch(switches);
      if (slowProcessor !== undefined) {
        processor.latencyMs = slowProcessor ? options.slowLatencyMs : options.normalLatencyMs;
        options.log({ msg: 'fault.processor-latency', latencyMs: processor.latencyMs });
      }
      json(res, 200, state());
    });
  };
}

/** Why the request may not touch the switches, or null when it may. */
function refusal(req: IncomingMessage, secretHash: Buffer): string | null {
  const given = req.headersDistinct[DEV_SECRET_HEADER.toLowerCase()] ?? [];
  if (given.length === 0) {
    return `${DEV_SECRET_HEADER} is missing: send the dev secret the server printed at start-up`;
  }
  // Hashes of equal length, compared in constant time: the time taken says nothing of the secret.
  if (given.length > 1 || !timingSafeEqual(sha256(given[0]!), secretHash)) {
    return `${DEV_SECRET_HEADER} is not this process's dev secret (printed at start-up; it changes at every start)`;
  }
  const type = req.headers['content-type']?.split(';')[0]!.trim().toLowerCase();
  if (req.method === 'POST' && type !== 'application/json') {
    return `Content-Type must be application/json; got ${type ? JSON.stringify(type) : 'none'}`;
  }
  return null;
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

function parseChange(text: string): Partial<FaultState> | string {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return 'send JSON: { "dropNext": n, "burst503": n, "slowProcessor": true|false }';
  }
  if (typeof body !== 'object' || body === null) return 'send a JSON object';
  const change: Partial<FaultState> = {};
  for (const [name, value] of Object.entries(body)) {
    if (name === 'slowProcessor' && typeof value === 'boolean') change.slowProcessor = value;
    else if (
      (name === 'dropNext' || name === 'burst503') &&
      Number.isInteger(value) &&
      (value as number) >= 0 &&
      (value as number) <= 100
    ) {
      change[name] = value as number;
    } else return `unknown or invalid switch ${name}: ${JSON.stringify(value)}`;
  }
  return change;
}

async function readBody(req: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of req) {
    text += String(chunk);
    if (text.length > 4_096) break;
  }
  return text;
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, {
    'content-type': 'application/json',
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
  });
  res.end(JSON.stringify(body));
}
