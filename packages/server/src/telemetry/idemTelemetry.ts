import { metrics, SpanStatusCode, trace, type Meter, type Span } from '@opentelemetry/api';
import type { IdemServerEvent } from '../types/IdemServerEvent.js';
import type { IdemTelemetry } from '../types/IdemTelemetry.js';

/** Instrument names of the server, for dashboards and alerts (see docs/operations.md). */
export const SERVER_METRICS = {
  /** Requests that ran the procedure (first executions and takeovers), by `idem.outcome`. */
  executions: 'idem.server.executions',
  /** Requests answered from a stored outcome. */
  replays: 'idem.server.replays',
  /** Requests idem refused, by `idem.reason` (in progress, key reused, bad key, ...). */
  rejections: 'idem.server.rejections',
  /** Executions that took over an earlier owner's expired lease or released key. */
  takeovers: 'idem.server.lease_takeovers',
  /** External calls whose outcome became unknown (sent to lookup or reconciliation). */
  unknownOutcomes: 'idem.server.unknown_outcomes',
  /**
   * Records moved to NEEDS_RECONCILIATION, by `idem.reconcile_reason` (`takeover_limit`: the
   * poison cap; `no_lookup`; `erased_after_call`; `erased_after_step`; `input_missing`).
   */
  reconciliations: 'idem.server.reconciliations',
  /** Key store failures answered 503. */
  storeErrors: 'idem.server.store_errors',
  /**
   * Calls without a key that a procedure with `keys: 'optional'` ran unprotected, by
   * `idem.procedure`: zero for a while on every procedure means `keys: 'required'` is safe.
   */
  unprotectedCalls: 'idem.server.unprotected_calls',
  /** Rows the reaper deleted. */
  reapedRows: 'idem.server.reaped_rows',
  /** Records the reaper found needing attention, by `idem.stuck_class` (last report). */
  stuckRecords: 'idem.server.stuck_records',
  /** Milliseconds of the claim statement(s). */
  claimDuration: 'idem.server.claim.duration',
  /** Milliseconds of the whole idempotent request, from claim to stored outcome. */
  requestDuration: 'idem.server.request.duration',
} as const;

/**
 * Builds the instruments once per app. `meter` defaults to the global meter provider's
 * `@idem/server` meter; `tracing: false` turns spans off.
 */
export function createIdemTelemetry(
  options: { meter?: Meter; tracing?: boolean } = {},
): IdemTelemetry {
  const meter = options.meter ?? metrics.getMeter('@idem/server');
  const tracer = options.tracing === false ? null : trace.getTracer('@idem/server');
  const executions = meter.createCounter(SERVER_METRICS.executions, {
    description: 'requests that ran the procedure',
  });
  const replays = meter.createCounter(SERVER_METRICS.replays, {
    description: 'requests answered from a stored outcome',
  });
  const rejections = meter.createCounter(SERVER_METRICS.rejections, {
    description: 'requests idem refused, by reason',
  });
  const takeovers = meter.createCounter(SERVER_METRICS.takeovers, {
    description: 'executions that took over a key',
  });
  const unknown = meter.createCounter(SERVER_METRICS.unknownOutcomes, {
    description: 'external calls with unknown outcome',
  });
  const reconciliations = meter.createCounter(SERVER_METRICS.reconciliations, {
    description: 'records handed to operators (NEEDS_RECONCILIATION), by reason',
  });
  const storeErrors = meter.createCounter(SERVER_METRICS.storeErrors, {
    description: 'key store failures',
  });
  const unprotected = meter.createCounter(SERVER_METRICS.unprotectedCalls, {
    description: 'calls without a key run unprotected (keys: optional), by procedure',
  });
  const reaped = meter.createCounter(SERVER_METRICS.reapedRows, {
    description: 'rows deleted by the reaper',
  });
  const claim = meter.createHistogram(SERVER_METRICS.claimDuration, {
    unit: 'ms',
    description: 'claim latency',
  });
  const request = meter.createHistogram(SERVER_METRICS.requestDuration, {
    unit: 'ms',
    description: 'idempotent request latency',
  });
  let lastStuck: Record<string, number> = {};
  meter
    .createObservableGauge(SERVER_METRICS.stuckRecords, {
      description: 'records needing attention, by class',
    })
    .addCallback((result) => {
      for (const [stuckClass, count] of Object.entries(lastStuck))
        result.observe(count, { 'idem.stuck_class': stuckClass });
    });

  return {
    onEvent(event) {
      const attributes = { 'idem.procedure': event.procedure };
      switch (event.type) {
        case 'executed':
          executions.add(1, {
            'idem.procedure': event.procedure,
            'idem.outcome': event.outcome,
          });
          if (event.takeover) takeovers.add(1, attributes);
          if (event.outcome === 'unsettled') unknown.add(1, attributes);
          break;
        case 'replayed':
          replays.add(1, attributes);
          break;
        case 'rejected':
          rejections.add(1, { ...attributes, 'idem.reason': event.reason });
          break;
        case 'store-error':
          storeErrors.add(1, attributes);
          break;
        case 'unprotected':
          unprotected.add(1, attributes);
          break;
      }
    },
    claimDuration: (ms, procedure) => claim.record(ms, { 'idem.procedure': procedure }),
    requestDuration: (ms, procedure) => request.record(ms, { 'idem.procedure': procedure }),
    reaped: (rows) => reaped.add(rows),
    reconciliation: (reason, procedure) =>
      reconciliations.add(1, { 'idem.procedure': procedure, 'idem.reconcile_reason': reason }),
    stuck: (report) => {
      lastStuck = { ...report };
    },
    async span(name, attributes, fn) {
      if (!tracer) return fn();
      return tracer.startActiveSpan(name, { attributes }, async (span: Span) => {
        try {
          return await fn();
        } catch (error) {
          span.setStatus({
            code: SpanStatusCode.ERROR,
            message: error instanceof Error ? error.message : String(error),
          });
          throw error;
        } finally {
          span.end();
        }
      });
    },
  };
}
