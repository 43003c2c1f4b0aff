import type { AnyTRPCRouter } from '@trpc/server';
import type { MutationPath } from '../app/mutationPaths.js';
import type { IdemTestRun } from '../app/startIdemTestApp.js';
import { GateRun, type IdemGateOptions, type IdemGateReport } from './GateRun.js';
import { describeAnswer } from './IdemGateError.js';

/** Options of {@link scopeGate}. */
export interface ScopeGateOptions<
  TRouter extends AnyTRPCRouter,
  TPath extends MutationPath<TRouter>,
> extends IdemGateOptions<TRouter, TPath> {
  /** A second caller, other than `caller`, who presents the same key. */
  otherCaller: string;
}

/**
 * Another caller with the same key: `caller` runs the procedure, then `otherCaller` sends the
 * same key (with an input built for it) and gets its own fresh execution, never the first
 * caller's result or a refusal; each caller's retry then replays its own result. The effect
 * moves by two. Throws an {@link IdemGateError} otherwise.
 */
export async function scopeGate<TRouter extends AnyTRPCRouter, TPath extends MutationPath<TRouter>>(
  run: IdemTestRun<TRouter>,
  options: ScopeGateOptions<TRouter, TPath>,
): Promise<IdemGateReport> {
  const gate = new GateRun('scope', run, options);
  if (options.otherCaller === options.caller) {
    throw new TypeError('@idem/testing: the scope gate needs an otherCaller other than caller');
  }
  const [a, b] = run.servers.length > 1 ? run.servers : [run.servers[0]!, run.servers[0]!];
  const key = gate.key();
  const ownInput = await gate.input();
  const otherInput = await gate.input(options.otherCaller);
  await gate.effect();
  const own = await gate.send(a!, ownInput, { key });
  gate.expectFresh(own, `${options.caller}'s request`);
  await gate.expectMoved(1, `${options.caller}'s request`);
  const other = await gate.send(b!, otherInput, { key, caller: options.otherCaller });
  if (!(other.status >= 200 && other.status < 300 && !other.replayed)) {
    gate.fail(
      `${options.otherCaller} with ${options.caller}'s key: a fresh execution of its own`,
      describeAnswer(other),
      other.replayed ||
        other.reason === 'IDEMPOTENCY_KEY_REUSED' ||
        other.reason === 'IDEMPOTENCY_REQUEST_IN_PROGRESS'
        ? `${options.otherCaller} met ${options.caller}'s record: \`scope\` in createIdempotency must come from the authenticated caller (e.g. ctx.accountId), and your createContext must give each caller its own identity`
        : `${options.otherCaller} was refused: does your createContext accept this caller, and does \`input\` build an input it may use?`,
    );
  }
  await gate.expectMoved(2, `${options.otherCaller}'s request`);
  const ownRetry = await gate.send(b!, ownInput, { key });
  gate.expectReplayOf(ownRetry, own, `${options.caller}'s retry`);
  const otherRetry = await gate.send(a!, otherInput, { key, caller: options.otherCaller });
  gate.expectReplayOf(otherRetry, other, `${options.otherCaller}'s retry`);
  await gate.expectMoved(2, 'after both retries');
  return { gate: 'scope', path: gate.path, answers: gate.answers, effectMoved: 2 };
}
