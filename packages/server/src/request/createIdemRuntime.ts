import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import {
  DEFAULT_MAX_TAKEOVERS,
  DEFAULT_REPLAY_WINDOW_MS,
  DEFAULT_RETENTION_MS,
  type IdempotencyOptions,
} from '@idem/contract';
import { ProcedureWindowRegistry } from './procedureWindows.js';
import { checkedQueue } from '../workers/workerPool.js';
import type { CreateIdempotencyOptions } from '../types/options.js';
import { jsonSerializer } from '../replay/jsonSerializer.js';
import { createIdemTelemetry } from '../telemetry/idemTelemetry.js';
import type { IdemContext } from '../types/IdemRequest.js';
import type { IdemRuntime } from '../types/IdemJob.js';
import { checkedStatusLocation } from './statusLocation.js';

/** The settings and services of one `createIdempotency`, defaults applied (per app). */
export function createIdemRuntime<TContext extends IdemContext, TTx>(
  options: CreateIdempotencyOptions<TContext, TTx>,
  defaults: IdempotencyOptions,
  keySecrets: IdemRuntime['keySecrets'],
): IdemRuntime {
  const onEvent = options.onEvent;
  const telemetry = createIdemTelemetry({
    ...(options.meter ? { meter: options.meter } : {}),
    tracing: options.tracing ?? true,
  });
  return {
    store: options.store,
    serializer: options.serializer ?? jsonSerializer,
    owner: options.owner ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`,
    inProgressRetryAfterMs: options.inProgressRetryAfterMs ?? 1000,
    maxTakeovers: checkedMaxTakeovers(options.maxTakeovers),
    inputCipher: options.inputCipher ?? null,
    telemetry,
    keySecrets,
    queue: checkedQueue(options.queue),
    acceptedPaths: new Set(),
    inFlight: new Map(),
    windows: new ProcedureWindowRegistry({
      replayWindowMs: defaults.replayWindowMs ?? DEFAULT_REPLAY_WINDOW_MS,
      retentionMs: defaults.retentionMs ?? DEFAULT_RETENTION_MS,
    }),
    statusLocation: checkedStatusLocation(options.statusLocation),
    emit: (event) => {
      telemetry.onEvent(event);
      if (!onEvent) return;
      try {
        onEvent(event);
      } catch {
        // A failing log hook must never change a request's outcome.
      }
    },
  };
}

function checkedMaxTakeovers(value: number | undefined): number {
  if (value === undefined) return DEFAULT_MAX_TAKEOVERS;
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new TypeError(`createIdempotency: maxTakeovers must be an integer from 0, got ${value}`);
  }
  return value;
}
