import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Faults, FaultSwitches } from '../Faults.js';
import type { JsonLogger } from '../jsonLogger.js';
import type { StandInProcessor } from '../StandInProcessor.js';

/** The path of the fault switches. */
export const FAULT_CONTROL_PATH = '/dev/faults';

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
}

/**
 * `GET /dev/faults` (the switches now) and `POST /dev/faults` with a JSON body
 * `{ "dropNext": 1, "burst503": 2, "slowProcessor": true }` (any subset; counts 0 to 100): the
 * checkout page's fault switches, on the example's own fault injection. Served only with
 * `IDEM_EXAMPLE_DEV_CONTROLS=1`. A connect-style middleware: other paths go on to `next`.
 */
export function faultControl(options: FaultControlOptions) {
  const { faults, processor } = options;
  const state = (): FaultState => ({
    ...faults.switches,
    slowProcessor: processor.latencyMs === options.slowLatencyMs,
  });
  return (req: IncomingMessage, res: ServerResponse, next: () => void): void => {
    if (new URL(req.url ?? '/', 'http://x').pathname !== FAULT_CONTROL_PATH) return next();
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
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}
