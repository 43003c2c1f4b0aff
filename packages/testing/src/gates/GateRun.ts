import { randomUUID } from 'node:crypto';
import {
  DEFAULT_LEASE_MS,
  DEFAULT_REPLAY_WINDOW_MS,
  DEFAULT_RETENTION_MS,
  type IdemMeta,
} from '@idem/contract';
import type { AnyTRPCRouter } from '@trpc/server';
import type { SQL } from 'drizzle-orm';
import type { IdemTestAnswer, IdemTestRequestOptions } from '../app/IdemTestAnswer.js';
import type { IdemTestDb } from '../app/IdemTestDatabase.js';
import type { MutationInput, MutationPath } from '../app/mutationPaths.js';
import type { IdemTestRun, IdemTestServer } from '../app/startIdemTestApp.js';
import {
  describeAnswer,
  firstDifference,
  IdemGateError,
  type IdemGateName,
} from './IdemGateError.js';

/** What an input factory gets: a number no other call in the process got, and the caller. */
export interface IdemGateInputContext {
  /** Differs on every call: use it for ids that must be unique (an order number). */
  seed: number;
  /** The caller the input is for. */
  caller: string;
  /** The kit's database connection, to create what the input refers to (an order to pay). */
  db: IdemTestDb;
}

/** Builds an input the procedure accepts (and succeeds with, unless the gate says otherwise). */
export type IdemGateInput<TRouter extends AnyTRPCRouter, TPath extends MutationPath<TRouter>> = (
  context: IdemGateInputContext,
) => MutationInput<TRouter, TPath> | Promise<MutationInput<TRouter, TPath>>;

/** What an effect counter gets besides the database. */
export interface IdemGateEffectTools {
  /** Counts the rows of a query (`select 1 from orders where ...`) on either driver. */
  count(query: SQL): Promise<number>;
}

/** The options every gate takes. */
export interface IdemGateOptions<
  TRouter extends AnyTRPCRouter,
  TPath extends MutationPath<TRouter>,
> {
  /** The idempotent mutation, e.g. `'payments.create'`. */
  path: TPath;
  /** Builds an input that succeeds: called once per distinct input the gate needs. */
  input: IdemGateInput<TRouter, TPath>;
  /** Who calls: your `createContext` gets it as `caller`. */
  caller: string;
  /**
   * The side effect to watch, as a number that grows by one per execution: rows in your table,
   * calls your fake downstream received. Read after every answer has arrived. `count` counts
   * the rows of a query on either driver: `(db, { count }) => count(sql\`select 1 from orders\`)`.
   */
  effect(db: IdemTestDb, tools: IdemGateEffectTools): Promise<number>;
}

/** What a gate that passed saw. */
export interface IdemGateReport {
  gate: IdemGateName;
  path: string;
  /** Every answer, in the order the requests were sent. */
  answers: IdemTestAnswer[];
  /** How far the effect moved over the whole gate. */
  effectMoved: number;
}

/** A procedure's idempotency as its meta declares it, with idem's defaults filled in. */
export interface GateProcedure {
  mode: 'local' | 'external';
  replayWindowMs: number;
  retentionMs: number;
  leaseMs: number;
  failures: 'deterministic' | 'none';
  replay: string;
  claim: 'at-commit' | 'first';
}

let lastSeed = Math.floor(Math.random() * 1_000_000) * 1_000;

/** @internal One gate's run: its requests, its answers, and its failure. */
export class GateRun<TRouter extends AnyTRPCRouter> {
  readonly answers: IdemTestAnswer[] = [];
  readonly procedure: GateProcedure;
  #effectAtStart: number | null = null;
  /** The first replay of each redacted outcome (by the first answer's body). */
  readonly #redactedReplays = new Map<string, IdemTestAnswer>();

  constructor(
    readonly gate: IdemGateName,
    readonly run: IdemTestRun<TRouter>,
    readonly options: IdemGateOptions<TRouter, MutationPath<TRouter>>,
  ) {
    if (run.servers.length === 0) {
      throw new TypeError(`@idem/testing: the ${gate} gate needs a run with at least one server`);
    }
    if (typeof options.effect !== 'function' || typeof options.input !== 'function') {
      throw new TypeError(
        `@idem/testing: the ${gate} gate needs input (a function that builds an input) and effect (a function of the database that counts the side effect)`,
      );
    }
    this.procedure = readProcedure(gate, run.servers[0]!.router, options.path);
  }

  get path(): string {
    return this.options.path;
  }

  /** A fresh key for this gate: random, so runs and gates never share one. */
  key(): string {
    return `idem-gate-${this.gate}-${randomUUID()}`;
  }

  /** Builds an input for `caller` (defaults to the gate's) with `factory` (the gate's `input`). */
  async input(
    caller: string = this.options.caller,
    factory: IdemGateInput<TRouter, any> = this.options.input,
  ): Promise<MutationInput<TRouter, any>> {
    lastSeed += 1;
    return factory({ seed: lastSeed, caller, db: this.run.database.db });
  }

  /** Reads the effect; the first read is the baseline of {@link moved}. */
  async effect(): Promise<number> {
    const { database } = this.run;
    const value = await this.options.effect(database.db, {
      count: (query) => database.count(query),
    });
    if (!Number.isFinite(value)) {
      throw new TypeError(
        `@idem/testing: effect must return a number (a count of the side effect), got ${String(value)}`,
      );
    }
    this.#effectAtStart ??= value;
    return value;
  }

  /** How far the effect moved since the first read. */
  async moved(): Promise<number> {
    const start = this.#effectAtStart ?? (await this.effect());
    return (await this.effect()) - start;
  }

  /** Sends one request; a request with no answer fails the gate, saying why it may hang. */
  async send(
    server: IdemTestServer<TRouter>,
    input: unknown,
    options: IdemTestRequestOptions,
  ): Promise<IdemTestAnswer> {
    try {
      const answer = await server.request(this.options.path, input as never, {
        caller: this.options.caller,
        ...options,
      });
      this.answers.push(answer);
      return answer;
    } catch (error) {
      if ((error as { isIdemTestTimeoutError?: unknown }).isIdemTestTimeoutError === true) {
        return this.fail(
          `an answer within ${options.timeoutMs ?? this.run.requestTimeoutMs} ms`,
          `no answer from server ${server.index}`,
          this.run.database.kind === 'pglite'
            ? 'the procedure never finished: PGlite runs one transaction at a time, so a query on the outer database inside the procedure waits forever for the transaction it is in. Is a write going around `ctx.idem.tx` (the `db` your factory got, a repository built on it)? Otherwise: is the handler waiting for something that never settles?'
            : 'the procedure never finished: is it waiting for a row lock its own transaction holds (a write on the outer database to a row `ctx.idem.tx` already wrote), for a pool with no free connection, or for something that never settles?',
        );
      }
      throw error;
    }
  }

  /** Sends requests at once; the answers come back in the order given. */
  sendAll(
    requests: readonly { server: IdemTestServer<TRouter>; input: unknown; key: string }[],
  ): Promise<IdemTestAnswer[]> {
    return Promise.all(requests.map(({ server, input, key }) => this.send(server, input, { key })));
  }

  /** Fails the gate. */
  fail(expected: string, actual: string, likelyCause: string): never {
    throw new IdemGateError({
      gate: this.gate,
      path: this.options.path,
      expected,
      actual,
      likelyCause,
      answers: this.answers,
    });
  }

  /** Checks an answer is a fresh success: 2xx, not a replay. */
  expectFresh(answer: IdemTestAnswer, step: string): void {
    if (answer.status >= 200 && answer.status < 300 && !answer.replayed) return;
    this.fail(
      `${step}: a fresh success (2xx, not replayed)`,
      describeAnswer(answer),
      refusalCause(answer),
    );
  }

  /** Checks the effect moved by `expected` since the gate began. */
  async expectMoved(expected: number, step: string): Promise<number> {
    const moved = await this.moved();
    if (moved === expected) return moved;
    this.fail(
      `${step}: the effect to have moved by ${expected} in all`,
      `it moved by ${moved}`,
      moved > expected
        ? 'a write is going around `ctx.idem.tx`: a write on the outer database (or another connection) commits even when idem rolls the attempt back or replays; in external mode, a side effect outside `ctx.idem.phase` / `ctx.idem.external` runs again on every attempt'
        : 'does `effect` count what the procedure does (the right table, the right downstream)? Is the write committed (made through `ctx.idem.tx`, not left in a transaction of your own)?',
    );
  }

  /**
   * Checks a retry got the stored outcome of `first`: byte for byte (replays `full`, `encrypted`
   * and `reference`); the same status and, from one replay to the next, the same bytes
   * (`redacted`: the replay is the redacted output, not the first answer); 409
   * `IDEMPOTENCY_REPLAY_UNAVAILABLE` (`none`). A stored failure replays byte for byte under every
   * strategy.
   */
  expectReplayOf(answer: IdemTestAnswer, first: IdemTestAnswer, step: string): void {
    const storedSuccess = first.status >= 200 && first.status < 300;
    const strategy = storedSuccess ? this.procedure.replay : 'full';
    if (strategy === 'none') {
      if (answer.reason === 'IDEMPOTENCY_REPLAY_UNAVAILABLE') return;
      this.fail(
        `${step}: 409 IDEMPOTENCY_REPLAY_UNAVAILABLE (the procedure stores nothing to replay: replay 'none')`,
        describeAnswer(answer),
        answer.status >= 200 && answer.status < 300
          ? 'the retry ran the procedure again: is the key reaching idem, and is `scope` the same on every request of one caller?'
          : refusalCause(answer),
      );
    }
    if (!answer.replayed) {
      this.fail(
        `${step}: a replay of the first answer (Idempotent-Replayed: true)`,
        describeAnswer(answer),
        answer.status >= 200 && answer.status < 300
          ? 'the retry ran the procedure again: is the key reaching idem (the procedure concatenates `idem.procedure()`), and is `scope` the same on every request of one caller (not a request id or a time)?'
          : refusalCause(answer),
      );
    }
    let expected = first;
    if (strategy === 'redacted') {
      // The first replay of a redacted outcome is the reference for every later one.
      const earlier = this.#redactedReplays.get(first.text);
      if (!earlier) {
        this.#redactedReplays.set(first.text, answer);
        if (answer.status === first.status) return;
      } else {
        expected = earlier;
      }
    }
    if (answer.status !== expected.status || answer.text !== expected.text) {
      this.fail(
        `${step}: the stored outcome byte for byte (${expected.status}, ${expected.text.length} characters${expected === first ? '' : ', as the first replay'})`,
        `${answer.status}, ${answer.text.length} characters, differing ${firstDifference(expected.text, answer.text)}`,
        'the replay is rebuilt instead of stored, and the rebuild is not a pure function of what was stored: is the handler or the replay strategy (`replay: { kind: "reference", rebuild }`, a `redact` function) reading the clock (Date.now(), new Date(), performance.now()), a random value or state that changed since?',
      );
    }
  }
}

/** Why an answer that should have been a success is not, phrased as what to check. */
export function refusalCause(answer: IdemTestAnswer): string {
  if (answer.replayed) {
    return 'a key never used before replayed a stored outcome: is `scope` constant (not derived from the caller), so that another gate or caller used this key space?';
  }
  if (answer.status === 401 || answer.status === 403) {
    return 'the caller was refused: does your createContext turn `caller` into an authenticated context (or `callerHeaders` send its credentials)?';
  }
  if (answer.reason === 'IDEMPOTENCY_KEY_REUSED') {
    return 'a key never used before was taken already: is `scope` constant (not derived from the caller)?';
  }
  if (answer.reason !== null) {
    return `idem refused the request (${answer.reason}): see docs/contract.md for the reason`;
  }
  if (answer.status >= 400 && answer.status < 500) {
    return 'the procedure refused the input the gate built: make `input` return an input it accepts and succeeds with';
  }
  return 'the procedure failed: see the error your server logged (a masked 5xx carries an error id)';
}

function readProcedure(gate: IdemGateName, router: AnyTRPCRouter, path: string): GateProcedure {
  const procedures = router._def.procedures as Record<
    string,
    { _def?: { type?: string; meta?: IdemMeta } } | undefined
  >;
  const def = procedures[path]?._def;
  if (!def) {
    throw new TypeError(`@idem/testing: the ${gate} gate: your router has no procedure ${path}`);
  }
  const idempotency = def.meta?.idempotency;
  if (def.type !== 'mutation' || !idempotency) {
    throw new TypeError(
      `@idem/testing: the ${gate} gate: ${path} is not an idempotent mutation: concatenate idem's procedure (.concat(idem.procedure())) to it`,
    );
  }
  return {
    mode: idempotency.mode ?? 'local',
    replayWindowMs: idempotency.replayWindowMs ?? DEFAULT_REPLAY_WINDOW_MS,
    retentionMs: idempotency.retentionMs ?? DEFAULT_RETENTION_MS,
    leaseMs: idempotency.leaseMs ?? DEFAULT_LEASE_MS,
    failures: idempotency.failures ?? 'deterministic',
    replay: idempotency.replay ?? 'full',
    claim: idempotency.claim ?? (idempotency.mode === 'external' ? 'first' : 'at-commit'),
  };
}
