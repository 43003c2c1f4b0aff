import type { IdemServerEvent } from './IdemServerEvent.js';

/** The server's metrics and spans, through `@opentelemetry/api` (no-ops until an SDK is set). */
export interface IdemTelemetry {
  onEvent(event: IdemServerEvent): void;
  claimDuration(ms: number, procedure: string): void;
  requestDuration(ms: number, procedure: string): void;
  reaped(rows: number): void;
  /** A record was moved to NEEDS_RECONCILIATION for `reason`. */
  reconciliation(reason: string, procedure: string): void;
  stuck(report: Record<string, number>): void;
  /** Runs `fn` in a span named `name` (a no-op span unless tracing is on and an SDK is set). */
  span<T>(name: string, attributes: Record<string, string>, fn: () => Promise<T>): Promise<T>;
}
