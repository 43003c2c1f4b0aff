import type { AnyTRPCRouter } from '@trpc/server';
import { DEFAULT_LEASE_MS, type RecoveryRecord, type RecoveryStore } from '@idem/contract';
import type { IdemContext, IdemRequest } from '../types/IdemRequest.js';
import type { IdemJob, IdemRuntime } from '../types/IdemJob.js';
import { checkedNumber, checkedProcedures, checkedTimerMs } from './checkedOptions.js';
import type { QueueOptions } from '../types/options.js';
import { routerProcedures } from '../trpc/trpcInternals.js';

const WORKER = 'idem.workerPool()';

/** Options of `idem.workerPool()` (configured once per process). */
export interface WorkerPoolOptions<TContext extends IdemContext> {
  /** The router holding the accepted procedures. */
  router: AnyTRPCRouter;
  /**
   * Builds the context a record's procedure runs in, as your `createContext` would for its
   * caller (idem adds `idemRequest`); its scope must be the record's. Required.
   */
  createContext(
    record: RecoveryRecord,
  ): Omit<TContext, 'idemRequest'> | Promise<Omit<TContext, 'idemRequest'>>;
  /** Records run at once in this process, at most. Defaults to 4. */
  concurrency?: number;
  /** Milliseconds between looks at the queue while a slot is free. Defaults to 250. */
  pollMs?: number;
  /** Lease a worker takes on a record. Defaults to 30 000. */
  leaseMs?: number;
  /**
   * Procedure paths to run. Defaults to every `respond: 'accepted'` procedure of the router; a path
   * that is not one of them is refused at start-up.
   */
  procedures?: readonly string[];
  /** Errors of the loop (a store that is down). Defaults to none. */
  onError?(error: unknown): void;
}

/** A started worker pool. */
export interface WorkerPool {
  /** Records running in this process now. */
  readonly running: number;
  /** Stops taking records and waits for the running ones to end. */
  stop(): Promise<void>;
}

/** Paths of the router's accepted (long-running) procedures. */
export function acceptedProcedures(router: AnyTRPCRouter): string[] {
  return routerProcedures(router)
    .filter(([, def]) => def.meta?.idempotency?.respond === 'accepted')
    .map(([path]) => path);
}

/** @internal The `queue` option, checked at start-up. */
export function checkedQueue(queue: QueueOptions | undefined): IdemRuntime['queue'] {
  if (queue === undefined) return null;
  const maxDepth = queue.maxDepth ?? 1_000;
  const retryAfterMs = queue.retryAfterMs ?? 1_000;
  if (!Number.isSafeInteger(maxDepth) || maxDepth < 1) {
    throw new TypeError(
      `createIdempotency: queue.maxDepth must be an integer from 1, got ${maxDepth}`,
    );
  }
  if (!Number.isSafeInteger(retryAfterMs) || retryAfterMs < 0) {
    throw new TypeError(
      `createIdempotency: queue.retryAfterMs must be milliseconds, got ${retryAfterMs}`,
    );
  }
  return { maxDepth, retryAfterMs };
}

/** @internal Built by `idem.workerPool()`. */
export function createWorkerPool<TContext extends IdemContext>(
  runtime: IdemRuntime,
  options: WorkerPoolOptions<TContext>,
): WorkerPool {
  if (runtime.queue === null) {
    throw new TypeError('idem.workerPool(): pass `queue` to createIdempotency first');
  }
  const store = runtime.store as RecoveryStore<unknown>;
  const procedures = checkedProcedures(
    WORKER,
    options.procedures,
    acceptedProcedures(options.router),
    "respond: 'accepted' procedures",
  );
  const concurrency = checkedNumber(WORKER, 'concurrency', options.concurrency ?? 4, 1, true);
  const leaseMs = checkedNumber(WORKER, 'leaseMs', options.leaseMs ?? DEFAULT_LEASE_MS, 1, true);
  const pollMs = checkedTimerMs(WORKER, 'pollMs', options.pollMs ?? 250, 1);
  for (const path of procedures) runtime.acceptedPaths.add(path);
  const caller = (ctx: object) => options.router.createCaller(ctx) as Record<string, unknown>;
  let running = 0;
  let filling = false;
  let stopped = false;
  const idle: (() => void)[] = [];

  async function run(record: RecoveryRecord): Promise<void> {
    const text =
      record.inputText === null
        ? null
        : runtime.inputCipher
          ? runtime.inputCipher.decrypt(record.inputText)
          : record.inputText;
    const input = text === null ? undefined : runtime.serializer.deserialize(text);
    const ctx = { ...(await options.createContext(record)), idemRequest: queuedRequest(record) };
    const procedure = record.procedure
      .split('.')
      .reduce<unknown>((node, segment) => (node as Record<string, unknown>)[segment], caller(ctx));
    // The outcome is stored by the procedure's own middleware; a failure is the record's state.
    await (procedure as (input: unknown) => Promise<unknown>)(input).catch(() => undefined);
  }

  async function fill(): Promise<void> {
    if (filling || stopped) return;
    filling = true;
    try {
      while (!stopped && running < concurrency) {
        const records = await store.takePending({
          owner: runtime.owner,
          leaseMs,
          limit: concurrency - running,
          procedures,
        });
        if (records.length === 0) break;
        for (const record of records) {
          running++;
          void run(record)
            .catch((error) => options.onError?.(error))
            .finally(() => {
              running--;
              if (running === 0) idle.splice(0).forEach((resolve) => resolve());
              void fill();
            });
        }
      }
    } catch (error) {
      options.onError?.(error);
    } finally {
      filling = false;
    }
  }

  const timer = setInterval(() => void fill(), pollMs);
  void fill();
  return {
    get running() {
      return running;
    },
    async stop() {
      stopped = true;
      clearInterval(timer);
      if (running > 0) await new Promise<void>((resolve) => idle.push(resolve));
    },
  };
}

function queuedRequest(record: RecoveryRecord): IdemRequest {
  return {
    keyValues: [],
    requestId: `worker:${record.operationId}`,
    attempt: null,
    timeoutMs: null,
    receivedAt: Date.now(),
    response: { headers: new Map() },
    resume: record,
  };
}
