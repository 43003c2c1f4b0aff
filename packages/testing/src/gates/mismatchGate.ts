import { isDeepStrictEqual } from 'node:util';
import type { AnyTRPCRouter } from '@trpc/server';
import type { MutationPath } from '../app/mutationPaths.js';
import type { IdemTestRun } from '../app/startIdemTestApp.js';
import { GateRun, type IdemGateOptions, type IdemGateReport } from './GateRun.js';
import { describeAnswer } from './IdemGateError.js';

/** Options of {@link mismatchGate}. */
export type MismatchGateOptions<
  TRouter extends AnyTRPCRouter,
  TPath extends MutationPath<TRouter>,
> = IdemGateOptions<TRouter, TPath>;

/**
 * The same key with a different input: the first request runs, the second (built by a second
 * call of `input`, which must differ from the first) is refused with 422
 * `IDEMPOTENCY_KEY_REUSED` and moves nothing, and a retry of the first input still replays the
 * first result byte for byte. Throws an {@link IdemGateError} otherwise.
 */
export async function mismatchGate<
  TRouter extends AnyTRPCRouter,
  TPath extends MutationPath<TRouter>,
>(
  run: IdemTestRun<TRouter>,
  options: MismatchGateOptions<TRouter, TPath>,
): Promise<IdemGateReport> {
  const gate = new GateRun('mismatch', run, options);
  const [a, b] = run.servers.length > 1 ? run.servers : [run.servers[0]!, run.servers[0]!];
  const key = gate.key();
  const firstInput = await gate.input();
  const otherInput = await gate.input();
  if (isDeepStrictEqual(firstInput, otherInput)) {
    throw new TypeError(
      '@idem/testing: the mismatch gate needs two different inputs: make `input` depend on its `seed` (e.g. a quantity or a reference built from it)',
    );
  }
  await gate.effect();
  const first = await gate.send(a!, firstInput, { key });
  gate.expectFresh(first, 'the first request');
  await gate.expectMoved(1, 'the first request');
  const reused = await gate.send(b!, otherInput, { key });
  if (reused.status !== 422 || reused.reason !== 'IDEMPOTENCY_KEY_REUSED') {
    gate.fail(
      'the same key with another input: 422 IDEMPOTENCY_KEY_REUSED',
      describeAnswer(reused),
      reused.replayed
        ? 'the first result was replayed for another input: the two inputs are equal once parsed, and the fingerprint is of the parsed input. Does the input schema drop, default or transform the field that differs? Make `input` vary a field the schema keeps'
        : reused.status >= 200 && reused.status < 300
          ? 'the procedure ran again for another input under the same key: is the key reaching idem, and is `scope` the same on every request of one caller?'
          : 'another refusal came first: see the answer',
    );
  }
  await gate.expectMoved(1, 'after the refused reuse');
  const retry = await gate.send(a!, firstInput, { key });
  gate.expectReplayOf(retry, first, 'a retry of the first input after the refused reuse');
  await gate.expectMoved(1, 'after the retry');
  return { gate: 'mismatch', path: gate.path, answers: gate.answers, effectMoved: 1 };
}
