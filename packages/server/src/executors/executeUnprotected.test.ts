import { IDEMPOTENCY_PROTECTED_HEADER } from '@idem/contract';
import { describe, expect, it } from 'vitest';
import { MemoryStore, unitJob, type MemoryTx } from '../../test/unit/memoryStore.js';
import { trpcMiddlewareMarker } from '../trpc/trpcInternals.js';
import type { ExternalIdemExecution, LocalIdemExecution } from '../types/IdemExecution.js';
import type { NextResult } from '../types/IdemJob.js';
import { executeUnprotected } from './executeUnprotected.js';

const ok = (data: unknown): NextResult => ({ ok: true, data, marker: trpcMiddlewareMarker });

/** A call without a key on `store`, in `mode`, whose handler gets `ctx.idem` as `T`. */
function unprotectedCall<T>(
  store: MemoryStore,
  mode: 'local' | 'external',
  handler: (idem: T, seen: { headers: Map<string, string>; events: number }) => Promise<NextResult>,
) {
  const { job, events, headers } = unitJob(store, { procedure: { mode, keys: 'optional' } });
  const run = () =>
    executeUnprotected({
      runtime: job.runtime,
      options: job.options,
      request: job.request,
      scope: 'acct',
      procedure: 'orders.create',
      operationId: 'op-1',
      next: (idem) => handler(idem as T, { headers: new Map(headers), events: events.length }),
    });
  return { run, events, headers };
}

describe('executeUnprotected', () => {
  it('marks the response and emits the event before the handler runs, and stores nothing', async () => {
    const store = new MemoryStore();
    const call = unprotectedCall<LocalIdemExecution<MemoryTx>>(
      store,
      'local',
      async (idem, seen) => {
        expect(seen.headers.get(IDEMPOTENCY_PROTECTED_HEADER)).toBe('false');
        expect(seen.events).toBe(1);
        expect(idem).toMatchObject({
          protected: false,
          keyHash: '',
          operationId: 'op-1',
          executions: 1,
        });
        expect(idem.tx).toBeDefined();
        return ok({ id: 1 });
      },
    );
    expect(await call.run()).toMatchObject({ ok: true, data: { id: 1 } });
    expect(call.events).toEqual([
      {
        type: 'unprotected',
        procedure: 'orders.create',
        scope: 'acct',
        keyHash: '',
        operationId: 'op-1',
        requestId: null,
      },
    ]);
    expect(await store.findByOperationId('op-1')).toBeNull();
  });

  it('external mode: a call past its time limit fails with TimeoutError, and the handler sees it', async () => {
    const store = new MemoryStore();
    const call = unprotectedCall<ExternalIdemExecution<MemoryTx>>(
      store,
      'external',
      async (idem) => {
        expect(idem.recoveryPoint).toBeNull();
        await idem.heartbeat();
        const error = await idem
          .external('charge', {
            timeoutMs: 1,
            // Answers only when its signal fires: the limit, not a timer of the test, decides.
            call: (_, { signal }) =>
              new Promise((_resolve, reject) =>
                signal.addEventListener('abort', () => reject(signal.reason)),
              ),
          })
          .catch((e: unknown) => e);
        return ok({ name: (error as Error).name });
      },
    );
    expect(await call.run()).toMatchObject({ ok: true, data: { name: 'TimeoutError' } });
  });

  it('external mode: steps run once each, now; a repeated or empty step name is refused as with a key', async () => {
    const store = new MemoryStore();
    const calls: string[] = [];
    const call = unprotectedCall<ExternalIdemExecution<MemoryTx>>(
      store,
      'external',
      async (idem) => {
        const written = await idem.phase('write', async (tx) => tx.id);
        const sent = await idem.external('send', {
          call: async (operationId) => {
            calls.push(operationId);
            return 'sent';
          },
          lookup: () => Promise.reject(new Error('never asked')),
        });
        const again = await idem.phase('write', async () => 0).catch((e: unknown) => e);
        const empty = await idem.external('', { call: async () => 1 }).catch((e: unknown) => e);
        return ok({ written, sent, again: String(again), empty: String(empty) });
      },
    );
    const result = await call.run();
    expect(result).toMatchObject({
      ok: true,
      data: {
        sent: 'sent',
        again: 'TypeError: idem: step "write" ran twice in one attempt; step names must be unique',
        empty: 'TypeError: idem: a step name is 1 to 64 characters',
      },
    });
    expect(typeof (result as { data: { written: unknown } }).data.written).toBe('number');
    expect(calls).toEqual(['op-1']);
  });
});
