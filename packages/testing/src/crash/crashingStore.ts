import type { RecoveryRecord, RecoveryStore } from '@idem/contract';
import { writeJournal } from './crashJournal.js';
import { crashPointName, type CrashPoint } from './crashPoints.js';

/**
 * Wraps the store the kit hands the app in a crash gate's child: it writes each boundary the
 * procedure's work passes to the journal, and SIGKILLs the process at `crash`, once. idem's
 * server does every write of external mode through these methods, so the boundaries are exact:
 * an intent is a `saveSteps` whose recovery point is `<step>:intent`, an external step's result
 * one with `callSettled`, the outcome `complete`.
 */
export function crashingStore<TTx>(
  store: RecoveryStore<TTx>,
  crash: CrashPoint | undefined,
): RecoveryStore<TTx> {
  /** Operation ids by record id: fences carry the id only. */
  const operations = new Map<string, string>();
  let crashed = false;
  const learn = (record: RecoveryRecord | { id: string; operationId: string }) =>
    operations.set(record.id, record.operationId);
  const at = (point: CrashPoint, recordId: string) => {
    if (crashed || !crash) return;
    if (crash.boundary !== point.boundary || crash.step !== point.step) return;
    crashed = true;
    const operationId = operations.get(recordId) ?? 'unknown';
    writeJournal({ kind: 'crash', point: crashPointName(point), operationId });
    process.kill(process.pid, 'SIGKILL');
  };

  const wrapped: Partial<RecoveryStore<TTx>> = {
    async claim(input, tx) {
      const result = await store.claim(input, tx);
      if (result.kind === 'claimed') {
        learn(result.record);
        writeJournal({
          kind: 'boundary',
          boundary: 'claim',
          operationId: result.record.operationId,
        });
      }
      return result;
    },
    async takeOverAbandoned(options) {
      const records = await store.takeOverAbandoned(options);
      for (const record of records) learn(record);
      return records;
    },
    async takePending(options) {
      const records = await store.takePending(options);
      for (const record of records) learn(record);
      return records;
    },
    async saveSteps(fence, update, tx) {
      const point = update.recoveryPoint ?? '';
      const operationId = operations.get(fence.id) ?? 'unknown';
      if (point.endsWith(':intent')) {
        const step = point.slice(0, -':intent'.length);
        at({ boundary: 'before-intent', step }, fence.id);
        const saved = await store.saveSteps(fence, update, tx);
        writeJournal({ kind: 'boundary', boundary: 'intent', step, operationId });
        if (saved) at({ boundary: 'after-intent', step }, fence.id);
        return saved;
      }
      if (update.callSettled) {
        at({ boundary: 'after-call', step: point }, fence.id);
        const saved = await store.saveSteps(fence, update, tx);
        writeJournal({ kind: 'boundary', boundary: 'settled', step: point, operationId });
        return saved;
      }
      const saved = await store.saveSteps(fence, update, tx);
      writeJournal({ kind: 'boundary', boundary: 'phase', step: point, operationId });
      return saved;
    },
    async complete(fence, response, tx) {
      at({ boundary: 'before-complete' }, fence.id);
      const written = await store.complete(fence, response, tx);
      const operationId = operations.get(fence.id) ?? 'unknown';
      writeJournal({ kind: 'boundary', boundary: 'complete', operationId });
      if (written) at({ boundary: 'after-complete' }, fence.id);
      return written;
    },
  };

  return new Proxy(store, {
    get(target, property) {
      if (Object.hasOwn(wrapped, property)) return wrapped[property as keyof typeof wrapped];
      const value = Reflect.get(target, property);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
