import type { AnyTRPCRouter } from '@trpc/server';
import { DEFAULT_LEASE_MS, type RecoveryRecord, type RecoveryStore } from '@idem/contract';
import type { IdemContext, IdemRequest } from '../types/IdemRequest.js';
import type { IdemRuntime } from '../types/IdemJob.js';
import { checkedNumber, checkedProcedures, checkedTimerMs } from './checkedOptions.js';
import { runPeriodically, type PeriodicWorker } from './runPeriodically.js';
import { routerProcedures } from '../trpc/trpcInternals.js';

const WORKER = 'idem.completer()';

/** Options of the completer (configured once per worker). */
export interface CompleterOptions<TContext extends IdemContext> {
  /** The router holding the procedures to complete. */
  router: AnyTRPCRouter;
  /**
   * Builds the context a record's procedure runs in, as your `createContext` would for its
   * caller (idem adds `idemRequest`). The scope it gives must be the record's, or the run is
   * refused. Required.
   */
  createContext(
    record: RecoveryRecord,
  ): Omit<TContext, 'idemRequest'> | Promise<Omit<TContext, 'idemRequest'>>;
  /**
   * Procedure paths to complete. Defaults to every external-mode idempotent procedure of the
   * router; a path that is not one of them is refused at start-up.
   */
  procedures?: readonly string[];
  /**
   * Records finished per run, at most. They are taken over one at a time, each just before its
   * work starts, so a record never waits under a lease taken long before. Defaults to 10.
   */
  batchSize?: number;
  /** Milliseconds between runs when started. Defaults to 5 000. */
  intervalMs?: number;
  /** Lease the completer takes on a record. Defaults to 30 000. */
  leaseMs?: number;
  /** Called with every run's report and with errors of the loop. Defaults to none. */
  onReport?(report: CompleterReport): void;
  onError?(error: unknown): void;
}

/** What one completer run did. */
export interface CompleterReport {
  /** Records taken over. */
  taken: number;
  /** Records whose procedure ran to a result (completed, or a stored deterministic failure). */
  finished: number;
  /** Records whose run failed again (released, left unsettled, or lost to another worker). */
  failed: number;
  /**
   * Records sent to manual reconciliation without running: taken over more often than
   * `maxTakeovers` of `createIdempotency` allows (the poison cap), or without a stored input.
   */
  handedToOperators: number;
}

/** The completer worker. */
export interface Completer extends PeriodicWorker {
  /** One pass: take over abandoned records and finish them from their recovery points. */
  runOnce(): Promise<CompleterReport>;
}

/** Paths of the router's external-mode idempotent procedures. */
export function externalProcedures(router: AnyTRPCRouter): string[] {
  return routerProcedures(router)
    .filter(([, def]) => def.meta?.idempotency?.mode === 'external')
    .map(([path]) => path);
}

/** @internal Built by `idem.completer()`, which shares the app's store, serializer and cipher. */
export function createCompleter<TContext extends IdemContext>(
  runtime: IdemRuntime,
  options: CompleterOptions<TContext>,
): Completer {
  const store = runtime.store;
  const procedures = checkedProcedures(
    WORKER,
    options.procedures,
    externalProcedures(options.router),
    'external-mode idempotent procedures',
  );
  const batchSize = checkedNumber(WORKER, 'batchSize', options.batchSize ?? 10, 1, true);
  const leaseMs = checkedNumber(WORKER, 'leaseMs', options.leaseMs ?? DEFAULT_LEASE_MS, 1, true);
  const intervalMs = checkedTimerMs(WORKER, 'intervalMs', options.intervalMs ?? 5_000, 0);
  const caller = (ctx: object) => options.router.createCaller(ctx) as Record<string, unknown>;

  async function finish(record: RecoveryRecord): Promise<keyof Omit<CompleterReport, 'taken'>> {
    const fence = { id: record.id, version: record.version };
    if (record.state === 'NEEDS_RECONCILIATION') {
      // The takeover hit the poison cap: the statement handed it to an operator.
      runtime.telemetry.reconciliation(
        record.reconcileReason ?? 'takeover_limit',
        record.procedure,
      );
      return 'handedToOperators';
    }
    if (record.inputText === null) {
      if (await store.markUnsettled(fence, 'NEEDS_RECONCILIATION', 'input_missing')) {
        runtime.telemetry.reconciliation('input_missing', record.procedure);
      }
      return 'handedToOperators';
    }
    const text = runtime.inputCipher
      ? runtime.inputCipher.decrypt(record.inputText)
      : record.inputText;
    const input = runtime.serializer.deserialize(text);
    const ctx = { ...(await options.createContext(record)), idemRequest: resumeRequest(record) };
    const procedure = record.procedure
      .split('.')
      .reduce<unknown>((node, segment) => (node as Record<string, unknown>)[segment], caller(ctx));
    try {
      await (procedure as (input: unknown) => Promise<unknown>)(input);
      return 'finished';
    } catch (error) {
      // A stored deterministic failure is a finished record too.
      const reread = await store.findByOperationId(record.operationId);
      return reread?.state === 'TERMINAL_FAILURE' ? 'finished' : 'failed';
    }
  }

  async function runOnce(): Promise<CompleterReport> {
    const report: CompleterReport = { taken: 0, finished: 0, failed: 0, handedToOperators: 0 };
    if (procedures.length === 0) return report;
    // One record at a time: each is taken (fresh lease) right before its work, never queued under
    // a lease that runs out while the records before it are worked on.
    while (report.taken < batchSize) {
      const [record] = await store.takeOverAbandoned({
        owner: runtime.owner,
        leaseMs,
        limit: 1,
        procedures,
        maxTakeovers: runtime.maxTakeovers,
      });
      if (!record) break;
      report.taken++;
      report[await finish(record)]++;
    }
    options.onReport?.(report);
    return report;
  }

  const worker = runPeriodically(runOnce, intervalMs, (error) => options.onError?.(error));
  return { runOnce, ...worker };
}

function resumeRequest(record: RecoveryRecord): IdemRequest {
  return {
    keyValues: [],
    requestId: `completer:${record.operationId}:${record.attempts}`,
    attempt: null,
    timeoutMs: null,
    receivedAt: Date.now(),
    response: { headers: new Map() },
    resume: record,
  };
}
