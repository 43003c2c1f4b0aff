import type { AnyTRPCRouter } from '@trpc/server';
import type { MutationPath } from '../app/mutationPaths.js';
import type { IdemTestRun } from '../app/startIdemTestApp.js';
import { ArrivalBarrier, runHooks } from '../app/arrivalBarrier.js';
import { GateRun, type IdemGateOptions, type IdemGateReport } from './GateRun.js';
import { describeAnswer, tallyAnswers } from './IdemGateError.js';

/** Options of {@link concurrencyGate}. */
export interface ConcurrencyGateOptions<
  TRouter extends AnyTRPCRouter,
  TPath extends MutationPath<TRouter>,
> extends IdemGateOptions<TRouter, TPath> {
  /** Identical requests sent at once, spread over the run's servers in turn. Defaults to 8. */
  requests?: number;
}

/**
 * N identical requests with one key, sent at once over every server of the run: the effect
 * moves by exactly one, one answer is the fresh result and every other is a replay of it byte for
 * byte or a 409 in progress (`IDEMPOTENCY_REQUEST_IN_PROGRESS`); none is a 5xx. A retry after
 * they all answered is a replay. Throws an {@link IdemGateError} otherwise.
 *
 * @example
 * await concurrencyGate(run, { path: 'orders.create', input: () => order, caller: 'alice', effect: countOrders });
 */
export async function concurrencyGate<
  TRouter extends AnyTRPCRouter,
  TPath extends MutationPath<TRouter>,
>(
  run: IdemTestRun<TRouter>,
  options: ConcurrencyGateOptions<TRouter, TPath>,
): Promise<IdemGateReport> {
  const gate = new GateRun('concurrency', run, options);
  const requests = options.requests ?? 8;
  if (!Number.isInteger(requests) || requests < 2) {
    throw new RangeError(
      `@idem/testing: the concurrency gate needs at least 2 requests, got ${requests}`,
    );
  }
  const key = gate.key();
  const input = await gate.input();
  await gate.effect();
  const servers = run.servers;
  // The requests reach the call that decides their race together, then race for real. At
  // commit, idem lets one request per key and process through and holds the others in the
  // process: one arrives per server.
  const hooks = runHooks.get(run);
  const atCommit = gate.procedure.mode === 'local' && gate.procedure.claim === 'at-commit';
  const barrier = new ArrivalBarrier(
    gate.procedure.mode === 'external' ? 'claim' : atCommit ? 'commitWithRecord' : 'transaction',
    atCommit ? Math.min(requests, servers.length) : requests,
  );
  if (hooks) hooks.barrier = barrier;
  const answers = await gate
    .sendAll(
      Array.from({ length: requests }, (_, i) => ({
        server: servers[i % servers.length]!,
        input,
        key,
      })),
    )
    .finally(() => {
      barrier.open();
      if (hooks) hooks.barrier = null;
    });
  const over = `${requests} requests with one key over ${servers.length} server${servers.length === 1 ? '' : 's'}`;

  const broken = answers.find((answer) => answer.status >= 500);
  if (broken) {
    gate.fail(
      `${over}: no 5xx`,
      `${describeAnswer(broken)} (${tallyAnswers(answers)})`,
      'the procedure failed under concurrent duplicates: does it hit a unique constraint of yours before idem decides (a write outside `ctx.idem.tx`)? Is the pool too small for the requests at once (poolSize)? See the error your server logged (a masked 5xx carries an error id)',
    );
  }
  await gate.expectMoved(1, over);
  const fresh = answers.filter((a) => a.status >= 200 && a.status < 300 && !a.replayed);
  const allowed = (a: (typeof answers)[number]) =>
    (a.status >= 200 && a.status < 300) ||
    a.reason === 'IDEMPOTENCY_REQUEST_IN_PROGRESS' ||
    (gate.procedure.replay === 'none' && a.reason === 'IDEMPOTENCY_REPLAY_UNAVAILABLE');
  const other = answers.find((answer) => !allowed(answer));
  if (other) {
    gate.fail(
      `${over}: the winner's result, replays of it, or 409 IDEMPOTENCY_REQUEST_IN_PROGRESS`,
      `${describeAnswer(other)} (${tallyAnswers(answers)})`,
      other.reason === 'IDEMPOTENCY_KEY_REUSED'
        ? 'identical requests were told the key was reused: is the input the same each time it is parsed (a default of `Date.now()` or a random id in the input schema makes each fingerprint differ)?'
        : 'a duplicate was refused: see the answer; does your createContext accept the caller on every server?',
    );
  }
  if (fresh.length !== 1) {
    gate.fail(
      `${over}: exactly one fresh execution`,
      `${fresh.length} fresh answers (${tallyAnswers(answers)})`,
      fresh.length === 0
        ? 'no request ran fresh: had this key been used before (a replay of an older outcome)?'
        : 'idem let several duplicates through: is `scope` the same on every request of one caller (not a request id or a time), and is the key reaching idem on every server?',
    );
  }
  const winner = fresh[0]!;
  for (const answer of answers) {
    if (answer.replayed || answer.reason === 'IDEMPOTENCY_REPLAY_UNAVAILABLE') {
      gate.expectReplayOf(answer, winner, `${over}, a duplicate`);
    }
  }
  const retry = await gate.send(servers[servers.length - 1]!, input, { key });
  gate.expectReplayOf(retry, winner, 'a retry after every duplicate answered');
  await gate.expectMoved(1, 'after the retry');
  return { gate: 'concurrency', path: gate.path, answers: gate.answers, effectMoved: 1 };
}
