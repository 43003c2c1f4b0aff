import type { IncomingMessage, ServerResponse } from 'node:http';
import { IDEMPOTENT_REPLAYED_HEADER } from '@idem/contract';
import type { JsonLogger } from './jsonLogger.js';

/**
 * Where `payments.create` can be killed, in the order a request reaches them:
 *
 * - `after-claim`: the claim is committed (IN_PROGRESS, lease, operation id); nothing else ran.
 * - `after-charge-before-record`: the processor charged; idem has not recorded the result.
 * - `before-commit`: inside the last phase's transaction (payment marked paid), before COMMIT.
 * - `after-commit-before-response`: the result is stored; the response was not written yet.
 */
export const CRASH_POINTS = [
  'after-claim',
  'after-charge-before-record',
  'before-commit',
  'after-commit-before-response',
] as const;
export type CrashPoint = (typeof CRASH_POINTS)[number];

/** The faults switched on at run time (the checkout page's switches, `POST /dev/faults`). */
export interface FaultSwitches {
  /** Fresh mutation responses still to drop, on top of the drop rate. */
  dropNext: number;
  /** Mutation requests (POST) still to answer with 503 before they reach tRPC. */
  burst503: number;
}

/** Where a request came from: only HTTP requests trigger faults, never the completer. */
export type RequestOrigin = 'http' | 'completer';

/**
 * The example's fault injection (configured once per process).
 *
 * - A crash point kills the process with SIGKILL (no cleanup, no response, no flush of anything
 *   but the log line before it) the first time an HTTP request reaches it.
 * - The drop rate cuts the connection instead of answering for that share of the responses of
 *   fresh executions (POST, 200, not a replay): the work is committed, the caller never hears.
 *   Drops are spread evenly and start with the first (rate 0.5 drops the 1st, 3rd, 5th...), so
 *   demos and tests repeat. Replays and errors are never dropped.
 * - Run-time switches (see {@link FaultSwitches}): drop the next fresh responses, and answer the
 *   next mutation requests with an HTML 503 and `Retry-After: 1` (an overloaded gateway; the
 *   request never reaches tRPC).
 */
export class Faults {
  #crashed = false;
  #eligible = 0;
  #dropNext = 0;
  #burst503 = 0;

  constructor(
    readonly crashAt: CrashPoint | null,
    readonly dropRate: number,
    private readonly log: JsonLogger,
  ) {}

  /** Kills the process if `point` is the configured crash point and has not fired yet. */
  reach(
    point: CrashPoint,
    request: { origin: RequestOrigin; operationId?: string; requestId?: string | null },
  ): void {
    if (this.crashAt !== point || this.#crashed || request.origin !== 'http') return;
    this.#crashed = true;
    this.log({
      msg: 'fault.crash',
      point,
      operationId: request.operationId ?? null,
      requestId: request.requestId ?? null,
    });
    process.kill(process.pid, 'SIGKILL');
  }

  /**
   * A connect-style middleware for tRPC's standalone adapter: holds back the response of a fresh
   * execution, then drops it or (at `after-commit-before-response`) kills the process instead.
   */
  readonly middleware = (req: IncomingMessage, res: ServerResponse, next: () => void): void => {
    if (req.method === 'POST' && this.#burst503 > 0) {
      this.#burst503--;
      this.log({ msg: 'fault.burst-503', path: req.url ?? null, left: this.#burst503 });
      req.resume();
      res.writeHead(503, { 'content-type': 'text/html', 'retry-after': '1' });
      res.end('<html><body><h1>503 Service Temporarily Unavailable</h1></body></html>\n');
      return;
    }
    if (
      req.method === 'POST' &&
      (this.dropRate > 0 || this.#dropNext > 0 || this.crashAt === 'after-commit-before-response')
    ) {
      this.#intercept(req, res);
    }
    next();
  };

  #intercept(req: IncomingMessage, res: ServerResponse): void {
    const write = res.write.bind(res);
    const end = res.end.bind(res);
    let decided: 'answer' | 'drop' | undefined;
    const decide = () => {
      if (decided) return decided;
      const fresh = res.statusCode === 200 && !res.hasHeader(IDEMPOTENT_REPLAYED_HEADER);
      decided = 'answer';
      if (!fresh) return decided;
      const requestId = header(req, 'x-request-id');
      if (req.url?.split('?')[0]?.endsWith('/payments.create')) {
        this.reach('after-commit-before-response', { origin: 'http', requestId });
      }
      if (this.#nextIsDropped()) {
        decided = 'drop';
        this.log({ msg: 'fault.drop-response', path: req.url ?? null, requestId });
        req.socket.destroy();
      }
      return decided;
    };
    res.write = ((...args: Parameters<typeof res.write>) =>
      decide() === 'drop' ? true : write(...args)) as typeof res.write;
    res.end = ((...args: Parameters<typeof res.end>) =>
      decide() === 'drop' ? res : end(...args)) as typeof res.end;
  }

  #nextIsDropped(): boolean {
    if (this.#dropNext > 0) {
      this.#dropNext--;
      return true;
    }
    return this.dropRate > 0 && isDropped(++this.#eligible, this.dropRate);
  }

  /** The run-time switches now. */
  get switches(): FaultSwitches {
    return { dropNext: this.#dropNext, burst503: this.#burst503 };
  }

  /** Sets run-time switches (the ones given; counts from 0 to 100). */
  switch(change: Partial<FaultSwitches>): FaultSwitches {
    if (change.dropNext !== undefined) this.#dropNext = change.dropNext;
    if (change.burst503 !== undefined) this.#burst503 = change.burst503;
    this.log({ msg: 'fault.switch', ...this.switches });
    return this.switches;
  }
}

/**
 * Whether the `n`th eligible response (from 1) is dropped at `rate`: drops are spread evenly and
 * start with the first, so that after any n responses, ceil(n * rate) of them were dropped.
 */
export function isDropped(n: number, rate: number): boolean {
  const epsilon = 1e-9;
  return Math.ceil(n * rate - epsilon) > Math.ceil((n - 1) * rate - epsilon);
}

function header(req: IncomingMessage, name: string): string | null {
  const value = req.headers[name];
  return typeof value === 'string' ? value : null;
}
