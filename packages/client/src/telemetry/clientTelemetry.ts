import { metrics, type Meter } from '@opentelemetry/api';
import type { IdemGiveUpEvent, IdemRetryEvent } from './IdemEvent.js';

/** Instrument names of the client link. */
export const CLIENT_METRICS = {
  /** Every attempt sent, first attempts included, by `idem.path`. */
  attempts: 'idem.client.attempts',
  /** Retries, by `idem.path` and `idem.failure` (the failure kind that caused them). */
  retries: 'idem.client.retries',
  /** Calls that gave up, by `idem.path` and `idem.reason` (`budget-exhausted`, ...). */
  giveUps: 'idem.client.give_ups',
  /** Retries refused because the client's retry budget was empty. */
  budgetExhausted: 'idem.client.budget_exhausted',
} as const;

/** The link's instruments (configured once per link), through `@opentelemetry/api`. */
export interface ClientTelemetry {
  attempt(path: string): void;
  retry(event: IdemRetryEvent): void;
  giveUp(event: IdemGiveUpEvent): void;
}

/** `meter` defaults to the global provider's `@idem/client` meter: a no-op until an SDK is set. */
export function createClientTelemetry(
  meter: Meter = metrics.getMeter('@idem/client'),
): ClientTelemetry {
  const attempts = meter.createCounter(CLIENT_METRICS.attempts, { description: 'attempts sent' });
  const retries = meter.createCounter(CLIENT_METRICS.retries, {
    description: 'retries by failure kind',
  });
  const giveUps = meter.createCounter(CLIENT_METRICS.giveUps, {
    description: 'calls that gave up, by reason',
  });
  const exhausted = meter.createCounter(CLIENT_METRICS.budgetExhausted, {
    description: 'retries refused by the budget',
  });
  return {
    attempt: (path) => attempts.add(1, { 'idem.path': path }),
    retry: (event) => retries.add(1, { 'idem.path': event.path, 'idem.failure': event.failure }),
    giveUp: (event) => {
      giveUps.add(1, { 'idem.path': event.path, 'idem.reason': event.because });
      if (event.because === 'budget-exhausted') exhausted.add(1, { 'idem.path': event.path });
    },
  };
}
