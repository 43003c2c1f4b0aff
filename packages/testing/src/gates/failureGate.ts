import type { AnyTRPCRouter } from '@trpc/server';
import type { IdemTestAnswer } from '../app/IdemTestAnswer.js';
import type { IdemTestDb } from '../app/IdemTestDatabase.js';
import type { MutationPath } from '../app/mutationPaths.js';
import type { IdemTestRun } from '../app/startIdemTestApp.js';
import {
  GateRun,
  type IdemGateInput,
  type IdemGateOptions,
  type IdemGateReport,
} from './GateRun.js';
import { describeAnswer } from './IdemGateError.js';

/** How to provoke one failure: the input, and what to arm before the first attempt. */
export interface IdemGateFailure<
  TRouter extends AnyTRPCRouter,
  TPath extends MutationPath<TRouter>,
> {
  /** Builds the input of the failing request (and of its retry). */
  input: IdemGateInput<TRouter, TPath>;
  /** Runs before the first attempt: make your fake downstream fail its next call. Defaults to none. */
  before?(db: IdemTestDb): void | Promise<void>;
  /**
   * Runs between the failed attempt and its retry: heal the downstream, so the retry of a
   * transient failure can succeed. Defaults to none (a retry that fails transiently again
   * still shows the key was released).
   */
  after?(db: IdemTestDb): void | Promise<void>;
}

/** Options of {@link failureGate}: give `deterministic`, `transient`, or both. */
export interface FailureGateOptions<
  TRouter extends AnyTRPCRouter,
  TPath extends MutationPath<TRouter>,
> extends Omit<IdemGateOptions<TRouter, TPath>, 'input'> {
  /**
   * A failure that will fail again: a `TRPCError` with a 4xx code other than 408, 409, 425, 429
   * and 499 (an unknown product, a card declined). Expected stored and replayed, unless the
   * procedure says `failures: 'none'`.
   */
  deterministic?: IdemGateFailure<TRouter, TPath>;
  /** A failure that may pass next time: a 5xx, 408 or 429 (a downstream timeout). Expected released. */
  transient?: IdemGateFailure<TRouter, TPath>;
}

const success = (a: IdemTestAnswer) => a.status >= 200 && a.status < 300;
const transientStatus = (status: number) =>
  status >= 500 || [408, 409, 425, 429, 499].includes(status);

/**
 * The failure policy. A deterministic failure is stored and replayed to its retry byte for byte
 * (`Idempotent-Replayed: true`), and the retry moves nothing; a transient failure is released:
 * its retry is not a replay and runs the procedure again (once healed, it succeeds and the effect
 * moves once). In local mode a failed attempt moves nothing. Throws an {@link IdemGateError}
 * otherwise.
 */
export async function failureGate<
  TRouter extends AnyTRPCRouter,
  TPath extends MutationPath<TRouter>,
>(run: IdemTestRun<TRouter>, options: FailureGateOptions<TRouter, TPath>): Promise<IdemGateReport> {
  const { deterministic, transient } = options;
  const first = deterministic ?? transient;
  if (!first) {
    throw new TypeError(
      '@idem/testing: the failure gate needs deterministic, transient or both: how to provoke each failure',
    );
  }
  const gate = new GateRun('failure', run, { ...options, input: first.input });
  const [a, b] = run.servers.length > 1 ? run.servers : [run.servers[0]!, run.servers[0]!];
  const db = run.database.db;
  const local = gate.procedure.mode === 'local';
  await gate.effect();

  if (deterministic) {
    const key = gate.key();
    const input = await gate.input(options.caller, deterministic.input);
    await deterministic.before?.(db);
    const failed = await gate.send(a!, input, { key });
    if (success(failed) || transientStatus(failed.status) || failed.replayed) {
      gate.fail(
        'a deterministic failure: a 4xx other than 408, 409, 425, 429 and 499, not replayed',
        describeAnswer(failed),
        success(failed)
          ? 'the request succeeded: make `deterministic.input` (or `before`) provoke the failure'
          : failed.replayed
            ? 'a fresh key replayed: is `scope` constant (not derived from the caller)?'
            : 'the failure came out as a status idem treats as transient (released, not stored): throw a TRPCError with a 4xx code (NOT_FOUND, BAD_REQUEST, PRECONDITION_FAILED) for a failure that will fail again; a thrown Error is a 500',
      );
    }
    const movedByFailure = await gate.moved();
    if (local && movedByFailure !== 0) {
      gate.fail(
        'a failed local-mode attempt: no effect (its transaction rolls back)',
        `the effect moved by ${movedByFailure}`,
        'a write is going around `ctx.idem.tx`: it commits although the attempt failed and rolled back',
      );
    }
    await deterministic.after?.(db);
    const retry = await gate.send(b!, input, { key });
    if (gate.procedure.failures === 'none') {
      if (retry.replayed) {
        gate.fail(
          "the retry of a failure under failures: 'none': not a replay",
          describeAnswer(retry),
          "the procedure declares failures: 'none', yet the failure was stored",
        );
      }
    } else {
      if (!retry.replayed) {
        gate.fail(
          'the retry of a deterministic failure: the stored failure, replayed (Idempotent-Replayed: true)',
          describeAnswer(retry),
          'the failure was not stored: is it a TRPCError with a stored 4xx code? A failure thrown as a plain Error, or rewrapped by a middleware of yours after idem, is a 500 and released',
        );
      }
      gate.expectReplayOf(retry, failed, 'the retry of a deterministic failure');
      const movedByRetry = (await gate.moved()) - movedByFailure;
      if (movedByRetry !== 0) {
        gate.fail(
          'the replay of a stored failure: no effect',
          `the effect moved by ${movedByRetry}`,
          'something outside the procedure moved the effect, or a middleware before idem does the work (idem must come before any side effect)',
        );
      }
    }
  }

  if (transient) {
    const key = gate.key();
    const input = await gate.input(options.caller, transient.input);
    const before = await gate.moved();
    await transient.before?.(db);
    const failed = await gate.send(a!, input, { key });
    if (success(failed) || !transientStatus(failed.status) || failed.replayed) {
      gate.fail(
        'a transient failure: a 5xx, 408 or 429, not replayed',
        describeAnswer(failed),
        success(failed)
          ? 'the request succeeded: make `transient.before` provoke the failure (a downstream that fails its next call)'
          : failed.replayed
            ? 'a fresh key replayed: is `scope` constant (not derived from the caller)?'
            : 'the failure came out as a 4xx, which idem stores and replays: a failure that may pass next time is a 5xx (SERVICE_UNAVAILABLE, INTERNAL_SERVER_ERROR), 408 or 429',
      );
    }
    const movedByFailure = (await gate.moved()) - before;
    if (local && movedByFailure !== 0) {
      gate.fail(
        'a failed local-mode attempt: no effect (its transaction rolls back)',
        `the effect moved by ${movedByFailure}`,
        'a write is going around `ctx.idem.tx`: it commits although the attempt failed, and the retry will do it again',
      );
    }
    await transient.after?.(db);
    const retry = await gate.send(b!, input, { key });
    if (retry.replayed) {
      gate.fail(
        'the retry of a transient failure: a new execution (the key was released)',
        describeAnswer(retry),
        'the transient failure was stored: idem releases 5xx, 408 and 429; is a middleware of yours turning the failure into a 4xx before idem sees it?',
      );
    }
    if (success(retry)) {
      const movedByRetry = (await gate.moved()) - before - movedByFailure;
      if (movedByRetry !== 1) {
        gate.fail(
          'the successful retry of a transient failure: the effect moved by 1',
          `it moved by ${movedByRetry}`,
          movedByRetry > 1
            ? 'a write is going around `ctx.idem.tx`, or (external mode) a side effect outside `ctx.idem.phase` / `ctx.idem.external` ran again'
            : 'does `effect` count what the procedure does?',
        );
      }
      const replay = await gate.send(a!, input, { key });
      gate.expectReplayOf(replay, retry, 'a retry after the successful retry');
    }
  }
  return {
    gate: 'failure',
    path: gate.path,
    answers: gate.answers,
    effectMoved: await gate.moved(),
  };
}
