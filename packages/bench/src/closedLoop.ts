import { Agent, request } from 'node:http';
import type { ClosedLoopResult } from './jobs.js';
import { summarize } from './stats.js';

/** One request's outcome, as the loop records it. */
export interface CallOutcome {
  status: string;
  replayed: boolean;
}

export interface ClosedLoopOptions {
  concurrency: number;
  warmupMs: number;
  durationMs?: number;
  requests?: number;
  keepSamples?: boolean;
  /** Sends request number `n` (0, 1, 2, ... over the whole run, warm-up included). */
  call: (n: number) => Promise<CallOutcome>;
}

/**
 * Runs `concurrency` lanes, each sending its next request as soon as the last one returned.
 * With `durationMs`: a warm-up of `warmupMs` (not recorded), then a window of at least
 * `durationMs` that also lasts until `2 * concurrency` requests (at least 10) have been recorded,
 * so that a slow run still measures something. Latency is recorded for the requests that START
 * in the window, throughput counts the requests that END in it. With `requests`: exactly that
 * many, all recorded.
 */
export async function closedLoop(
  options: ClosedLoopOptions,
): Promise<Omit<ClosedLoopResult, 'keysUsed' | 'cpuUs'> & { issued: number }> {
  const { concurrency, requests } = options;
  const latencies: number[] = [];
  const ends: number[] = [];
  const samples: [number, number][] = [];
  const statuses: Record<string, number> = {};
  const minRecorded = Math.max(10, 2 * concurrency);
  let issued = 0;
  let replayed = 0;
  const t0 = performance.now();
  const from = requests === undefined ? t0 + options.warmupMs : t0;
  const until = from + (options.durationMs ?? 0);
  let stopAt: number | null = null;
  const done = () => {
    if (stopAt !== null) return true;
    if (requests !== undefined) return issued >= requests;
    const now = performance.now();
    if (now < until || latencies.length < minRecorded) return false;
    stopAt = now;
    return true;
  };

  async function lane() {
    while (!done()) {
      const n = issued++;
      const start = performance.now();
      // Decided when the request starts: one that outlives the window still counts, whole.
      const measured = start >= from && stopAt === null;
      let outcome: CallOutcome;
      try {
        outcome = await options.call(n);
      } catch {
        outcome = { status: 'error', replayed: false };
      }
      const end = performance.now();
      if (end >= from) ends.push(end);
      if (!measured) continue;
      latencies.push(end - start);
      if (options.keepSamples) samples.push([performance.timeOrigin + start, end - start]);
      statuses[outcome.status] = (statuses[outcome.status] ?? 0) + 1;
      if (outcome.replayed) replayed += 1;
    }
  }
  await Promise.all(Array.from({ length: concurrency }, lane));
  const windowEnd = stopAt ?? Math.max(from, ...ends);
  const elapsedMs = windowEnd - from;
  const counted =
    requests === undefined ? ends.filter((end) => end < windowEnd).length : latencies.length;
  return {
    issued,
    requests: latencies.length,
    elapsedMs,
    throughput: elapsedMs > 0 ? (counted * 1000) / elapsedMs : Number.NaN,
    latency: summarize(latencies),
    statuses,
    replayed,
    ...(options.keepSamples ? { samples } : {}),
  };
}

/** A response as {@link httpPost} returns it. */
export interface PostOutcome extends CallOutcome {
  body: string | null;
}

/**
 * POSTs a tRPC mutation over node http (no fetch, no tRPC client: the load generator itself
 * should cost as little as possible). Reads the whole body; keeps it only when `keepBody`.
 */
export function httpPost(
  agent: Agent,
  url: URL,
  path: string,
  body: string,
  headers: Record<string, string>,
  keepBody = false,
): Promise<PostOutcome> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        agent,
        host: url.hostname,
        port: url.port,
        path: `/${path}`,
        method: 'POST',
        headers: {
          ...headers,
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => keepBody && chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () =>
          resolve({
            status: String(res.statusCode ?? 0),
            replayed: res.headers['idempotent-replayed'] === 'true',
            body: keepBody ? Buffer.concat(chunks).toString('utf8') : null,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
