import { TRPCError } from '@trpc/server';
import { describe, expect, it } from 'vitest';
import { answered, MemoryStore, unitJob } from '../../test/unit/memoryStore.js';
import { readIdemErrorCause } from '../errors/IdemRequestError.js';
import type { IdemJob, NextResult } from '../types/IdemJob.js';
import type { IdemServerEvent } from '../types/IdemServerEvent.js';
import { fingerprint } from '../hashing/fingerprint.js';
import { trpcMiddlewareMarker } from '../trpc/trpcInternals.js';
import { executeAtCommit } from './executeAtCommit.js';
import { executeLocal } from './executeLocal.js';

const failing = (code: TRPCError['code']) => async (): Promise<NextResult> => ({
  ok: false,
  error: new TRPCError({ code, message: `failed with ${code}` }),
  marker: trpcMiddlewareMarker,
});

/** A job of a local-mode procedure that takes its key at commit. */
function atCommitJob(
  store: MemoryStore,
  options: Omit<NonNullable<Parameters<typeof unitJob>[1]>, 'procedure'> = {},
) {
  return unitJob(store, { ...options, procedure: { claim: 'at-commit' } });
}

/** The claim-first path as executeAtCommit hands over to it: records that it was asked. */
function claimFirstSpy() {
  const jobs: IdemJob[] = [];
  const answer: NextResult = { ok: true, data: 'claim-first', marker: trpcMiddlewareMarker };
  return {
    jobs,
    claimFirst: async (job: IdemJob) => {
      jobs.push(job);
      return answer;
    },
  };
}

const never = () => Promise.reject(new Error('the handler must not run'));

/** `executed <outcome>` for executed events, the type for the others. */
const kinds = (events: IdemServerEvent[]) =>
  events.map((e) => (e.type === 'executed' ? `executed ${e.outcome}` : e.type));

/** A stored outcome of the unit job's key, as a request that committed before left it. */
function storedRow(
  store: MemoryStore,
  fields: Parameters<MemoryStore['record']>[1],
  input: unknown = { amount: 1 },
) {
  const { job } = unitJob(store, { input });
  return store.record(job.claim, {
    state: 'COMPLETED',
    leaseRemainingMs: 0,
    responseStatus: 200,
    responseBody: '{"id":42}',
    ...fields,
  });
}

describe('executeAtCommit (in-memory store)', () => {
  it('a fresh key: runs the handler once and records its result as the commit', async () => {
    const store = new MemoryStore();
    const seen: { operationId?: string; tx?: unknown; executions?: number }[] = [];
    const { job, events, headers } = atCommitJob(store, {
      next: async (idem) => {
        seen.push(idem);
        return { ok: true, data: { id: 7 }, marker: trpcMiddlewareMarker };
      },
    });
    const { jobs, claimFirst } = claimFirstSpy();
    await expect(answered(job, executeAtCommit(job, claimFirst))).resolves.toMatchObject({
      ok: true,
      data: { id: 7 },
    });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ executions: 1, tx: { id: expect.any(Number) } });
    const rows = [...store.rows.values()];
    expect(rows).toMatchObject([
      {
        state: 'COMPLETED',
        responseStatus: 200,
        responseBody: '{"id":7}',
        version: 1,
        attempts: 1,
        operationId: seen[0]!.operationId,
      },
    ]);
    expect(kinds(events)).toEqual(['executed completed']);
    expect(events[0]).toMatchObject({ operationId: seen[0]!.operationId, takeover: false });
    expect(headers.get('Idempotent-Replayed')).toBeUndefined();
    expect(jobs).toHaveLength(0);
  });

  it('a stored outcome: replayed from the one read, the handler does not run', async () => {
    const store = new MemoryStore();
    const first = atCommitJob(store);
    await answered(first.job, executeAtCommit(first.job, claimFirstSpy().claimFirst));
    const { job, events, headers } = atCommitJob(store, { next: never });
    const { jobs, claimFirst } = claimFirstSpy();
    await expect(answered(job, executeAtCommit(job, claimFirst))).resolves.toMatchObject({
      ok: true,
      data: { id: 1 },
    });
    expect(headers.get('Idempotent-Replayed')).toBe('true');
    expect(kinds(events)).toEqual(['replayed']);
    expect(jobs).toHaveLength(0);
  });

  it('a stored outcome of another input: 422 key reused, the handler does not run', async () => {
    const store = new MemoryStore();
    store.seed(storedRow(store, {}, { amount: 2 }));
    const { job } = atCommitJob(store, { next: never });
    const error = (await answered(job, executeAtCommit(job, claimFirstSpy().claimFirst)).catch(
      (e: unknown) => e,
    )) as TRPCError;
    expect(readIdemErrorCause(error)?.reason).toBe('IDEMPOTENCY_KEY_REUSED');
  });

  it("taken: a concurrent record committed first; this run rolls back and replays the winner's", async () => {
    const store = new MemoryStore();
    const winner = storedRow(store, { responseBody: '{"id":42}' });
    store.commitNext = { kind: 'taken', record: winner };
    let runs = 0;
    const { job, events, headers } = atCommitJob(store, {
      next: async () => {
        runs += 1;
        return { ok: true, data: { id: 7 }, marker: trpcMiddlewareMarker };
      },
    });
    const { jobs, claimFirst } = claimFirstSpy();
    await expect(answered(job, executeAtCommit(job, claimFirst))).resolves.toMatchObject({
      ok: true,
      data: { id: 42 },
    });
    expect(runs).toBe(1);
    expect(headers.get('Idempotent-Replayed')).toBe('true');
    expect(kinds(events)).toEqual(['executed rolled-back', 'replayed']);
    expect(events[0]).toMatchObject({ operationId: null });
    expect(events[1]).toMatchObject({ operationId: winner.operationId });
    // Only the winner's row: nothing of this run was kept.
    expect([...store.rows.values()]).toEqual([winner]);
    expect(jobs).toHaveLength(0);
  });

  it('taken by a row that settles nothing (a claim-first record in progress): the claim-first path answers', async () => {
    const store = new MemoryStore();
    store.commitNext = {
      kind: 'taken',
      record: storedRow(store, { state: 'IN_PROGRESS', responseStatus: null, responseBody: null }),
    };
    const { job, events } = atCommitJob(store);
    const { jobs, claimFirst } = claimFirstSpy();
    await expect(answered(job, executeAtCommit(job, claimFirst))).resolves.toMatchObject({
      data: 'claim-first',
    });
    expect(jobs).toEqual([job]);
    expect(kinds(events)).toEqual(['executed rolled-back']);
  });

  it('taken by a request with another input: 422 key reused', async () => {
    const store = new MemoryStore();
    store.commitNext = { kind: 'taken', record: storedRow(store, {}, { amount: 2 }) };
    const { job, events } = atCommitJob(store);
    const error = (await answered(job, executeAtCommit(job, claimFirstSpy().claimFirst)).catch(
      (e: unknown) => e,
    )) as TRPCError;
    expect(readIdemErrorCause(error)?.reason).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(kinds(events)).toEqual(['executed rolled-back', 'rejected']);
  });

  it('busy (the record waited past lockTimeoutMs): rolled back, 409 in progress with Retry-After, nothing stored', async () => {
    const store = new MemoryStore();
    store.commitNext = { kind: 'busy' };
    let runs = 0;
    const { job, events, headers } = atCommitJob(store, {
      next: async () => {
        runs += 1;
        return { ok: true, data: { id: 7 }, marker: trpcMiddlewareMarker };
      },
    });
    const error = (await answered(job, executeAtCommit(job, claimFirstSpy().claimFirst)).catch(
      (e: unknown) => e,
    )) as TRPCError;
    expect(readIdemErrorCause(error)?.reason).toBe('IDEMPOTENCY_REQUEST_IN_PROGRESS');
    expect(headers.get('Retry-After')).toBe('1');
    expect(runs).toBe(1);
    expect(store.rows.size).toBe(0);
    expect(kinds(events)).toEqual(['executed rolled-back', 'rejected']);
  });

  it('a deterministic failure: rolled back, stored on its own, and every retry is answered the same', async () => {
    const store = new MemoryStore();
    const { job, events } = atCommitJob(store, { next: failing('BAD_REQUEST') });
    const first = await answered(job, executeAtCommit(job, claimFirstSpy().claimFirst));
    expect(first).toMatchObject({
      ok: false,
      error: { code: 'BAD_REQUEST', message: 'failed with BAD_REQUEST' },
    });
    const rows = [...store.rows.values()];
    expect(rows).toMatchObject([{ state: 'TERMINAL_FAILURE', responseStatus: 400, attempts: 1 }]);
    expect(kinds(events)).toEqual(['executed failed']);
    expect(events[0]).toMatchObject({ operationId: rows[0]!.operationId });

    const retry = atCommitJob(store, { next: never });
    const replay = await answered(
      retry.job,
      executeAtCommit(retry.job, claimFirstSpy().claimFirst),
    );
    expect(retry.headers.get('Idempotent-Replayed')).toBe('true');
    expect(replay.ok).toBe(false);
    if (replay.ok || first.ok) throw new Error('unreachable');
    expect({ code: replay.error.code, message: replay.error.message }).toEqual({
      code: first.error.code,
      message: first.error.message,
    });
  });

  it("a deterministic failure while another request's outcome committed: that outcome is the answer", async () => {
    const store = new MemoryStore();
    const winner = storedRow(store, { responseBody: '{"id":42}' });
    // The winner commits between this run's rollback and the insert of its failure.
    const insertOutcome = store.insertOutcome.bind(store);
    store.insertOutcome = async (record) => {
      store.seed(winner);
      return insertOutcome(record);
    };
    const { job, events, headers } = atCommitJob(store, { next: failing('BAD_REQUEST') });
    await expect(
      answered(job, executeAtCommit(job, claimFirstSpy().claimFirst)),
    ).resolves.toMatchObject({
      ok: true,
      data: { id: 42 },
    });
    expect(headers.get('Idempotent-Replayed')).toBe('true');
    expect([...store.rows.values()]).toEqual([winner]);
    expect(kinds(events)).toEqual(['executed rolled-back', 'replayed']);
  });

  it('a deterministic failure while the key got a row in progress: the failure answers, unstored', async () => {
    const store = new MemoryStore();
    const claimed = storedRow(store, { state: 'IN_PROGRESS', responseStatus: null });
    const insertOutcome = store.insertOutcome.bind(store);
    store.insertOutcome = async (record) => {
      store.seed(claimed);
      return insertOutcome(record);
    };
    const { job, events, headers } = atCommitJob(store, { next: failing('BAD_REQUEST') });
    await expect(
      answered(job, executeAtCommit(job, claimFirstSpy().claimFirst)),
    ).resolves.toMatchObject({
      ok: false,
      error: { code: 'BAD_REQUEST' },
    });
    expect(headers.get('Idempotent-Replayed')).toBeUndefined();
    expect([...store.rows.values()]).toEqual([claimed]);
    expect(kinds(events)).toEqual(['executed rolled-back']);
  });

  it.each([
    ['a 5xx', 'INTERNAL_SERVER_ERROR', 'deterministic'],
    ['a 409', 'CONFLICT', 'deterministic'],
    ['a 4xx under failures: none', 'BAD_REQUEST', 'none'],
  ] as const)(
    '%s: transient, rolled back, nothing stored, the next retry runs again',
    async (_, code, failures) => {
      const store = new MemoryStore();
      const { job, events } = unitJob(store, {
        next: failing(code),
        procedure: { claim: 'at-commit', failures },
      });
      await expect(
        answered(job, executeAtCommit(job, claimFirstSpy().claimFirst)),
      ).resolves.toMatchObject({
        ok: false,
        error: { code },
      });
      expect(store.rows.size).toBe(0);
      expect(kinds(events)).toEqual(['executed released']);
      let runs = 0;
      const retry = atCommitJob(store, {
        next: async () => {
          runs += 1;
          return { ok: true, data: { id: 2 }, marker: trpcMiddlewareMarker };
        },
      });
      await answered(retry.job, executeAtCommit(retry.job, claimFirstSpy().claimFirst));
      expect(runs).toBe(1);
    },
  );

  it('storing a deterministic failure fails: the failure is still the answer, nothing stored', async () => {
    const store = new MemoryStore();
    store.failNext = 'fail';
    const { job, events } = atCommitJob(store, { next: failing('BAD_REQUEST') });
    await expect(
      answered(job, executeAtCommit(job, claimFirstSpy().claimFirst)),
    ).resolves.toMatchObject({
      ok: false,
      error: { code: 'BAD_REQUEST' },
    });
    expect(store.rows.size).toBe(0);
    expect(kinds(events)).toEqual(['store-error']);
  });

  it('the store fails at the read: 503 store unavailable, the handler does not run', async () => {
    const store = new MemoryStore();
    store.failNext = 'read';
    const { job, events, headers } = atCommitJob(store, { next: never });
    const error = (await answered(job, executeAtCommit(job, claimFirstSpy().claimFirst)).catch(
      (e: unknown) => e,
    )) as TRPCError;
    expect(readIdemErrorCause(error)?.reason).toBe('IDEMPOTENCY_STORE_UNAVAILABLE');
    expect(headers.get('Retry-After')).toBe('1');
    expect(kinds(events)).toEqual(['store-error', 'rejected']);
  });

  it('the record fails (the database went away at commit): 503, the work rolled back, nothing stored', async () => {
    const store = new MemoryStore();
    store.failNext = 'record';
    let runs = 0;
    const { job, events } = atCommitJob(store, {
      next: async () => {
        runs += 1;
        return { ok: true, data: { id: 7 }, marker: trpcMiddlewareMarker };
      },
    });
    const error = (await answered(job, executeAtCommit(job, claimFirstSpy().claimFirst)).catch(
      (e: unknown) => e,
    )) as TRPCError;
    expect(readIdemErrorCause(error)?.reason).toBe('IDEMPOTENCY_STORE_UNAVAILABLE');
    expect(runs).toBe(1);
    expect(store.rows.size).toBe(0);
    expect(kinds(events)).toEqual(['store-error', 'rejected']);
  });

  it.each([
    ['a row in progress', { state: 'IN_PROGRESS', responseStatus: null, responseBody: null }],
    ['a released key', { state: 'RETRYABLE_FAILURE', responseStatus: null, responseBody: null }],
    ['a stored outcome whose replay window closed', { replayExpired: true }],
    [
      'an unsettled external record',
      { state: 'OUTCOME_UNKNOWN', responseStatus: null, responseBody: null },
    ],
  ] as const)(
    '%s: handed to the claim-first path, which decides; nothing runs here',
    async (_, fields) => {
      const store = new MemoryStore();
      const row = storedRow(store, fields);
      store.seed(row);
      const { job, events } = atCommitJob(store, { next: never });
      const { jobs, claimFirst } = claimFirstSpy();
      await expect(answered(job, executeAtCommit(job, claimFirst))).resolves.toMatchObject({
        data: 'claim-first',
      });
      expect(jobs).toEqual([job]);
      expect(events).toEqual([]);
      expect([...store.rows.values()]).toEqual([row]);
    },
  );
});

describe('executeLocal: which path takes the key', () => {
  /** Counts the store's claims and at-commit records. */
  function countingStore() {
    const store = new MemoryStore();
    const calls = { claim: 0, commitWithRecord: 0 };
    const claim = store.claim.bind(store);
    const commitWithRecord = store.commitWithRecord.bind(store);
    store.claim = (input) => (calls.claim++, claim(input));
    store.commitWithRecord = (work) => (calls.commitWithRecord++, commitWithRecord(work));
    return { store, calls };
  }

  it("at commit unless the procedure says claim: 'first'", async () => {
    const atCommit = countingStore();
    await executeLocal(atCommitJob(atCommit.store).job);
    expect(atCommit.calls).toEqual({ claim: 0, commitWithRecord: 1 });

    const first = countingStore();
    await executeLocal(unitJob(first.store, { procedure: { claim: 'first' } }).job);
    expect(first.calls).toEqual({ claim: 1, commitWithRecord: 0 });
  });

  it('a released key goes through the claim-first path, which takes it over and runs once', async () => {
    const { store, calls } = countingStore();
    const { job: probe } = atCommitJob(store);
    store.seed(
      store.record(probe.claim, {
        state: 'RETRYABLE_FAILURE',
        fingerprint: fingerprint({ amount: 1 }),
      }),
    );
    let runs = 0;
    const { job, events } = atCommitJob(store, {
      next: async () => {
        runs += 1;
        return { ok: true, data: { id: 3 }, marker: trpcMiddlewareMarker };
      },
    });
    await expect(answered(job, executeLocal(job))).resolves.toMatchObject({
      ok: true,
      data: { id: 3 },
    });
    expect(runs).toBe(1);
    expect(calls).toEqual({ claim: 1, commitWithRecord: 0 });
    expect(kinds(events)).toEqual(['executed completed']);
    expect(events[0]).toMatchObject({ takeover: true });
    expect([...store.rows.values()]).toMatchObject([{ state: 'COMPLETED', attempts: 2 }]);
  });
});

describe('duplicates within one process', () => {
  /** Two requests with the same key on one runtime (one server process). */
  function twoOnOneProcess(lockTimeoutMs: number) {
    const store = new MemoryStore();
    const first = unitJob(store, { procedure: { claim: 'at-commit', lockTimeoutMs } });
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let runs = 0;
    const leader: IdemJob = {
      ...first.job,
      next: async () => {
        runs += 1;
        await gate;
        return { ok: true, data: { id: 7 }, marker: trpcMiddlewareMarker };
      },
    };
    const duplicate: IdemJob = {
      ...first.job,
      next: async () => {
        runs += 1;
        return { ok: true, data: { id: 8 }, marker: trpcMiddlewareMarker };
      },
    };
    return { leader, duplicate, open, runs: () => runs, events: first.events };
  }
  const claimFirst = () => Promise.reject(new Error('not this path'));

  it('a duplicate waits for the request running the key, then replays it without running', async () => {
    const { leader, duplicate, open, runs } = twoOnOneProcess(2_000);
    const first = answered(leader, executeAtCommit(leader, claimFirst));
    const second = answered(duplicate, executeAtCommit(duplicate, claimFirst));
    await new Promise((resolve) => setImmediate(resolve));
    expect(runs()).toBe(1);
    open();
    expect(await first).toMatchObject({ ok: true, data: { id: 7 } });
    expect(await second).toMatchObject({ ok: true, data: { id: 7 } });
    expect(runs()).toBe(1);
  });

  it('the wait is bounded by lockTimeoutMs: then 409 in progress, and the handler never ran', async () => {
    const { leader, duplicate, open, runs } = twoOnOneProcess(30);
    const first = answered(leader, executeAtCommit(leader, claimFirst));
    const refused = await answered(duplicate, executeAtCommit(duplicate, claimFirst)).then(
      () => null,
      (error: Error) => error,
    );
    expect(readIdemErrorCause(refused ?? {})?.reason).toBe('IDEMPOTENCY_REQUEST_IN_PROGRESS');
    expect(runs()).toBe(1);
    open();
    expect(await first).toMatchObject({ ok: true });
  });

  it('a leader that left the key unsettled hands it to the next duplicate, which runs', async () => {
    const { leader, duplicate, runs } = twoOnOneProcess(2_000);
    const failingLeader: IdemJob = { ...leader, next: failing('INTERNAL_SERVER_ERROR') };
    const first = answered(failingLeader, executeAtCommit(failingLeader, claimFirst));
    const second = answered(duplicate, executeAtCommit(duplicate, claimFirst));
    expect(await first).toMatchObject({ ok: false });
    expect(await second).toMatchObject({ ok: true, data: { id: 8 } });
    expect(runs()).toBe(1); // the duplicate's own run (the failing leader does not count here)
  });
});

describe('a first attempt (Idempotency-Attempt: 1) reads its key like any other request', () => {
  function firstAttempt(store: MemoryStore, next: IdemJob['next']) {
    const made = unitJob(store, { procedure: { claim: 'at-commit' } });
    const job: IdemJob = { ...made.job, request: { ...made.job.request, attempt: 1 }, next };
    return { ...made, job };
  }
  const counted = () => {
    let runs = 0;
    const next = async (): Promise<NextResult> => {
      runs += 1;
      return { ok: true, data: { id: 2 }, marker: trpcMiddlewareMarker };
    };
    return { next, runs: () => runs };
  };

  it('a key with a stored outcome is replayed without running the handler', async () => {
    const store = new MemoryStore();
    store.seed(storedRow(store, {}));
    const handler = counted();
    const { job, events } = firstAttempt(store, handler.next);
    expect(await answered(job, executeAtCommit(job, claimFirstSpy().claimFirst))).toMatchObject({
      ok: true,
      data: { id: 42 },
    });
    expect(handler.runs()).toBe(0);
    expect(kinds(events)).toEqual(['replayed']);
  });

  it('ten sequential first attempts on a stored key run the handler never', async () => {
    const store = new MemoryStore();
    const handler = counted();
    const first = firstAttempt(store, handler.next);
    expect(
      await answered(first.job, executeAtCommit(first.job, claimFirstSpy().claimFirst)),
    ).toMatchObject({
      ok: true,
      data: { id: 2 },
    });
    for (let i = 0; i < 10; i++) {
      const retry = firstAttempt(store, handler.next);
      expect(
        await answered(retry.job, executeAtCommit(retry.job, claimFirstSpy().claimFirst)),
      ).toMatchObject({
        ok: true,
        data: { id: 2 },
      });
      expect(kinds(retry.events)).toEqual(['replayed']);
    }
    expect(handler.runs()).toBe(1);
  });

  it('a key whose replay window closed goes to the claim-first path without running here', async () => {
    const store = new MemoryStore();
    store.seed(storedRow(store, { replayExpired: true }));
    const spy = claimFirstSpy();
    const handler = counted();
    const { job } = firstAttempt(store, handler.next);
    expect(await answered(job, executeAtCommit(job, spy.claimFirst))).toMatchObject({
      data: 'claim-first',
    });
    expect(spy.jobs).toHaveLength(1);
    expect(handler.runs()).toBe(0);
  });

  it('a read that fails answers 503 and runs nothing', async () => {
    const store = new MemoryStore();
    store.failNext = 'read';
    const handler = counted();
    const { job } = firstAttempt(store, handler.next);
    const refused = await answered(job, executeAtCommit(job, claimFirstSpy().claimFirst)).then(
      () => null,
      (error: Error) => error,
    );
    expect(readIdemErrorCause(refused ?? {})?.reason).toBe('IDEMPOTENCY_STORE_UNAVAILABLE');
    expect(handler.runs()).toBe(0);
    expect(store.rows.size).toBe(0);
  });
});
