import { createReaper } from '@idem/server';
import { idemRecords } from '@idem/store-drizzle';
import type { AnyTRPCRouter } from '@trpc/server';
import { and, eq, gt, max } from 'drizzle-orm';
import type { IdemTestStore } from '../app/IdemTestDatabase.js';
import type { MutationPath } from '../app/mutationPaths.js';
import type { IdemTestRun, IdemTestServer } from '../app/startIdemTestApp.js';
import { GateRun, refusalCause, type IdemGateOptions, type IdemGateReport } from './GateRun.js';
import { describeAnswer } from './IdemGateError.js';

/** Options of {@link clockGate}. */
export type ClockGateOptions<
  TRouter extends AnyTRPCRouter,
  TPath extends MutationPath<TRouter>,
> = IdemGateOptions<TRouter, TPath>;

const success = (answer: { status: number; replayed: boolean }) =>
  answer.status >= 200 && answer.status < 300 && !answer.replayed;

/** The most a boundary is approached or passed by: the database clock is set this far either side. */
const MAX_MARGIN_MS = 60_000;

/** Half the span, at most a minute: the real time a step takes must stay below it. */
const margin = (spanMs: number) => Math.min(Math.floor(spanMs / 2), MAX_MARGIN_MS);

/**
 * The procedure's windows at their boundaries, with the database clock moved (servers and a
 * reaper whose store clock runs ahead), never with sleeps. Read from the procedure's meta:
 *
 * - replay window: a retry just before its end replays; just after it, the key is a new request
 *   that runs again (the effect moves again, unless your own rules refuse it with a 4xx, as a
 *   second payment of one order is);
 * - cleanup threshold: the reaper just before `retentionMs` after completion keeps the record,
 *   just after it deletes it;
 * - lease (external mode): while the first attempt holds its claim (the kit holds its completion),
 *   a retry just before the lease ends is 409 in progress, one just after takes the work over and
 *   finishes it from its recovery points (the effect moves once in all), and the first attempt's
 *   late completion is discarded. Local mode has no lease to cross: its claim lives in its
 *   transaction.
 *
 * Runs the reaper on the run's database: completed records older than the threshold are deleted.
 * Throws an {@link IdemGateError} when a boundary is not where the procedure says.
 */
export async function clockGate<TRouter extends AnyTRPCRouter, TPath extends MutationPath<TRouter>>(
  run: IdemTestRun<TRouter>,
  options: ClockGateOptions<TRouter, TPath>,
): Promise<IdemGateReport> {
  const gate = new GateRun('clock', run, options);
  const { replayWindowMs, retentionMs, leaseMs, mode } = gate.procedure;
  const extra: IdemTestServer<TRouter>[] = [];
  const at = async (clockShiftMs: number) => {
    const server = await run.addServer({ clockShiftMs });
    extra.push(server);
    return server;
  };
  try {
    await gate.effect();
    const now = run.servers[0]!;

    // The replay window.
    const windowMargin = margin(replayWindowMs);
    const key = gate.key();
    const input = await gate.input();
    const first = await gate.send(now, input, { key });
    gate.expectFresh(first, 'the first request');
    await gate.expectMoved(1, 'the first request');
    const before = await gate.send(await at(replayWindowMs - windowMargin), input, { key });
    gate.expectReplayOf(
      before,
      first,
      `a retry ${windowMargin} ms before the replay window (${replayWindowMs} ms) ends`,
    );
    const after = await gate.send(await at(replayWindowMs + windowMargin), input, { key });
    // A new request: it runs. Your own rules may refuse it then (a second payment of one order).
    const refusedByYou = after.status >= 400 && after.status < 500 && after.reason === null;
    if (after.replayed || after.status >= 500 || (!refusedByYou && !success(after))) {
      gate.fail(
        `a retry ${windowMargin} ms after the replay window (${replayWindowMs} ms) ended: a new request, run again (not a replay)`,
        describeAnswer(after),
        after.replayed
          ? 'the stored outcome outlived its window: does the procedure set replayWindowMs longer than you expect (createIdempotency defaults, per-procedure options)?'
          : refusalCause(after),
      );
    }
    await gate.expectMoved(
      refusedByYou ? 1 : 2,
      refusedByYou
        ? 'after the replay window ended, the new request refused by the procedure'
        : 'after the replay window ended, the new request run',
    );

    // The cleanup threshold.
    const cleanupMargin = margin(retentionMs);
    const db = run.database.db;
    const path = gate.path;
    const [{ last } = { last: null }] = await db
      .select({ last: max(idemRecords.id) })
      .from(idemRecords)
      .where(eq(idemRecords.procedure, path));
    const kept = await gate.send(now, await gate.input(), { key: gate.key() });
    gate.expectFresh(kept, 'the request whose record the reaper meets');
    const rows = await db
      .select({ id: idemRecords.id })
      .from(idemRecords)
      .where(and(eq(idemRecords.procedure, path), gt(idemRecords.id, last ?? -1n)));
    if (rows.length !== 1) {
      gate.fail(
        'one new record for the request',
        `${rows.length} new records of ${path}`,
        'another request of this procedure ran during the gate: run gates on one run one at a time',
      );
    }
    const recordId = rows[0]!.id;
    const present = async () =>
      (
        await db
          .select({ id: idemRecords.id })
          .from(idemRecords)
          .where(eq(idemRecords.id, recordId))
      ).length === 1;
    const reapAt = (clockShiftMs: number) =>
      createReaper({
        store: run.database.storeAt(clockShiftMs) as IdemTestStore,
        pauseRatio: 0,
      }).runOnce();
    await reapAt(retentionMs - cleanupMargin);
    if (!(await present())) {
      gate.fail(
        `the record kept by a reaper ${cleanupMargin} ms before the cleanup threshold (retentionMs ${retentionMs} ms)`,
        'the reaper deleted it',
        'the record was written with a shorter retention than the procedure declares: is retentionMs set differently where the store is used (another createIdempotency, a completer with other options)?',
      );
    }
    await reapAt(retentionMs + cleanupMargin);
    if (await present()) {
      gate.fail(
        `the record deleted by a reaper ${cleanupMargin} ms after the cleanup threshold (retentionMs ${retentionMs} ms)`,
        'the record is still there',
        'the record was written with a longer retention than the procedure declares, or it is not completed (still in progress, or waiting for reconciliation)',
      );
    }

    // The lease (external mode).
    if (mode === 'external') await leaseStep(gate, run, at, leaseMs);
  } finally {
    await Promise.allSettled(extra.map((server) => server.close()));
  }
  return { gate: 'clock', path: gate.path, answers: gate.answers, effectMoved: await gate.moved() };
}

async function leaseStep<TRouter extends AnyTRPCRouter>(
  gate: GateRun<TRouter>,
  run: IdemTestRun<TRouter>,
  at: (clockShiftMs: number) => Promise<IdemTestServer<TRouter>>,
  leaseMs: number,
): Promise<void> {
  const leaseMargin = margin(leaseMs);
  const held = holdFirstCompletion();
  const holder = await run.addServer({ wrapStore: held.wrap });
  try {
    const key = gate.key();
    const input = await gate.input();
    const start = await gate.moved();
    const firstAttempt = gate.send(holder, input, { key });
    // The first attempt has done its work and waits to complete: its claim and lease stand.
    await Promise.race([held.reached, firstAttempt]);
    if (!held.isReached()) {
      gate.fail(
        'the first attempt to reach its completion and hold its lease',
        describeAnswer(await firstAttempt),
        'the first attempt ended without completing: make `input` build an input that succeeds',
      );
    }
    const early = await gate.send(await at(leaseMs - leaseMargin), input, { key });
    if (early.reason !== 'IDEMPOTENCY_REQUEST_IN_PROGRESS') {
      gate.fail(
        `a retry ${leaseMargin} ms before the lease (${leaseMs} ms) ends: 409 IDEMPOTENCY_REQUEST_IN_PROGRESS`,
        describeAnswer(early),
        'the claim did not hold its lease: is leaseMs what the procedure declares?',
      );
    }
    const late = await gate.send(await at(leaseMs + leaseMargin), input, { key });
    if (!(late.status >= 200 && late.status < 300 && !late.replayed)) {
      gate.fail(
        `a retry ${leaseMargin} ms after the lease (${leaseMs} ms) ended: the work taken over and finished`,
        describeAnswer(late),
        'the takeover failed: can the handler run again from the top, each step returning its recorded result (steps inside `ctx.idem.phase` / `ctx.idem.external`, nothing done between them that fails the second time)?',
      );
    }
    const moved = (await gate.moved()) - start;
    if (moved !== 1) {
      gate.fail(
        'the taken-over work: the effect moved by 1 in all',
        `it moved by ${moved}`,
        moved > 1
          ? 'the takeover repeated a side effect: is it outside `ctx.idem.phase` / `ctx.idem.external` (a write on the outer database, a downstream call without its step)?'
          : 'does `effect` count what the procedure does?',
      );
    }
    held.release();
    const stale = await firstAttempt;
    if (stale.status >= 200 && stale.status < 300) {
      gate.fail(
        "the first attempt's late completion: discarded (its lease was taken over)",
        describeAnswer(stale),
        'the stale attempt completed over the takeover: the store did not fence the completion by version',
      );
    }
    const replay = await gate.send(run.servers[0]!, input, { key });
    gate.expectReplayOf(replay, late, 'a retry after the takeover finished');
  } finally {
    held.release();
    await holder.close();
  }
}

/** A store wrapper that holds the first `complete` call until released. */
function holdFirstCompletion() {
  let reach!: () => void;
  let release!: () => void;
  let isReached = false;
  const reached = new Promise<void>((resolve) => (reach = resolve));
  const released = new Promise<void>((resolve) => (release = resolve));
  const wrap = (store: IdemTestStore): IdemTestStore =>
    new Proxy(store, {
      get(target, property) {
        const value = Reflect.get(target, property, target) as unknown;
        if (typeof value !== 'function') return value;
        if (property !== 'complete') return value.bind(target);
        return async (...args: unknown[]) => {
          if (!isReached) {
            isReached = true;
            reach();
            await released;
          }
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
  return { wrap, reached, isReached: () => isReached, release: () => release() };
}
