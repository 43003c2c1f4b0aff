import type { AnyTRPCRouter } from '@trpc/server';
import type { MutationPath } from '../app/mutationPaths.js';
import type { IdemTestRun } from '../app/startIdemTestApp.js';
import { GateRun, type IdemGateOptions, type IdemGateReport } from './GateRun.js';
import { describeAnswer } from './IdemGateError.js';

/** Options of {@link replayGate}. */
export type ReplayGateOptions<
  TRouter extends AnyTRPCRouter,
  TPath extends MutationPath<TRouter>,
> = IdemGateOptions<TRouter, TPath>;

/**
 * A retry gets the stored outcome byte for byte: same status, same body, the same content type,
 * and `Idempotent-Replayed: true`, from another server and again from a server whose database
 * clock is half the replay window later; the effect moves once. A replay rebuilt from changing
 * state (the clock read into the output) fails it. Throws an {@link IdemGateError} otherwise.
 */
export async function replayGate<
  TRouter extends AnyTRPCRouter,
  TPath extends MutationPath<TRouter>,
>(run: IdemTestRun<TRouter>, options: ReplayGateOptions<TRouter, TPath>): Promise<IdemGateReport> {
  const gate = new GateRun('replay', run, options);
  const servers = run.servers;
  const key = gate.key();
  const input = await gate.input();
  await gate.effect();
  const first = await gate.send(servers[0]!, input, { key });
  gate.expectFresh(first, 'the first request');
  await gate.expectMoved(1, 'the first request');
  const retry = await gate.send(servers[servers.length - 1]!, input, { key });
  gate.expectReplayOf(retry, first, 'a retry');
  const type = (answer: typeof first) => answer.headers['content-type'] ?? '';
  if (type(retry) !== type(first)) {
    gate.fail(
      `a retry: the first answer's content type (${type(first)})`,
      `${type(retry)} (${describeAnswer(retry)})`,
      'the replay is served differently from the first answer: is a responseMeta or middleware of yours setting headers only on fresh executions?',
    );
  }
  const later = await run.addServer({
    clockShiftMs: Math.floor(gate.procedure.replayWindowMs / 2),
  });
  try {
    const lateRetry = await gate.send(later, input, { key });
    gate.expectReplayOf(
      lateRetry,
      first,
      `a retry half the replay window later (${Math.floor(gate.procedure.replayWindowMs / 2)} ms, database clock)`,
    );
  } finally {
    await later.close();
  }
  await gate.expectMoved(1, 'after the retries');
  return { gate: 'replay', path: gate.path, answers: gate.answers, effectMoved: 1 };
}
