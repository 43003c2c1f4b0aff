import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { openIdemTestDatabase, type IdemTestDatabase } from '../app/IdemTestDatabase.js';
import type { IdemTestDb } from '../app/IdemTestDatabase.js';
import type { IdemGateEffectTools, IdemGateInputContext } from '../gates/GateRun.js';
import { postMutation, requestHeaders, type IdemTestAnswer } from '../app/IdemTestAnswer.js';
import type { IdemTestAppDefinition } from '../app/defineIdemTestApp.js';
import type { AnyTRPCRouter } from '@trpc/server';
import {
  createPgliteDirectory,
  openCrashDatabase,
  type CrashDatabaseLocation,
} from './crashDatabase.js';
import type { CrashChildConfig } from './crashChildConfig.js';
import { readJournal, type JournalEntry } from './crashJournal.js';
import {
  crashPointName,
  crashPointsOf,
  describeCrashPoint,
  type CrashBoundary,
  type CrashPoint,
} from './crashPoints.js';
import { CrashPointsGateError, type CrashProblem } from './CrashPointsGateError.js';
import { loadCrashApp } from './loadCrashApp.js';
import { loaderArgs, spawnCrashChild, type CrashChild } from './spawnCrashChild.js';

/** Options of {@link crashPointsGate}. */
export interface CrashPointsGateOptions {
  /**
   * Your app module: a file that exports your app made with `defineIdemTestApp` (its default
   * export, or {@link exportName}), e.g. `new URL('./paymentsTestApp.ts', import.meta.url)`. The
   * gate runs it in child processes, under tsx (see {@link loader}). Its factory also returns
   * `completer` (see `CrashTestAppInstance`) unless {@link completer} is false.
   */
  app: URL | string;
  /** The export of {@link app} holding the app. Defaults to `default`, else its only app. */
  exportName?: string;
  /** The external-mode mutation to crash, e.g. `'payments.create'`. */
  path: string;
  /**
   * Builds the input of one operation (the crash run and its retries send the same one), as the
   * other gates' `input`: `seed` differs on every call, `db` is the kit's connection.
   */
  input(context: IdemGateInputContext): unknown;
  /** Who calls: your `createContext` gets it as `caller`. */
  caller: string;
  /**
   * Your effect as a number that grows by one per execution (rows of your table, charges your
   * fake downstream made), as the other gates' `effect`: it must move by exactly one per
   * operation, whatever crashed.
   */
  effect(db: IdemTestDb, tools: IdemGateEffectTools): Promise<number>;
  /**
   * A PostgreSQL URL, e.g. `process.env.DATABASE_URL`. Defaults to none: PGlite, in a data
   * directory on disk that the processes open in turn.
   */
  databaseUrl?: string;
  /**
   * With {@link databaseUrl}: run in a throwaway database created on that server (dropped at the
   * end), as the other gates do. Defaults to true.
   */
  freshDatabase?: boolean;
  /**
   * The boundaries to crash at (each external step's, and the outcome's). Defaults to all:
   * `before-intent`, `after-intent`, `after-call`, `before-complete`, `after-complete`.
   */
  boundaries?: readonly CrashBoundary[];
  /**
   * Also recover every crash with your completer (then a retry that must replay its result).
   * Defaults to true.
   */
  completer?: boolean;
  /**
   * The node arguments that load your TypeScript in the child processes. Defaults to
   * `['--import', <tsx>]`, tsx found from your app module, the working directory or this package.
   */
  loader?: readonly string[];
  /** Milliseconds a request may take. Defaults to 15 000. */
  requestTimeoutMs?: number;
}

/** How one crash run went. */
export interface CrashRun {
  /** `after-call "charge"`, `before-complete`, ... */
  point: string;
  /** What finished the crashed work: the client's retry, or the completer then a retry. */
  recovery: 'retry' | 'completer';
  /** The crashed operation's id, or null when the process was never killed. */
  operationId: string | null;
  /** Downstream calls and lookups recorded for the operation. */
  calls: number;
  lookups: number;
}

/** What the gate ran, when it passed. */
export interface CrashPointsReport {
  /** The procedure's external steps, in order. */
  steps: string[];
  runs: CrashRun[];
  /** How far the effect moved, for how many operations (one clean run and the crash runs). */
  effect: { moved: number; operations: number };
}

/**
 * The crash points gate: kills the process running your procedure with SIGKILL at every boundary
 * of external mode, then recovers each crash with a retry (a new process whose database clock is
 * past the crashed lease) and with your completer, and checks that every downstream call was made
 * at most once per operation (found by its lookup otherwise), that your effect moved by exactly one
 * per operation, and that the retry answered the result. Throws a {@link CrashPointsGateError}
 * naming each crash point that went wrong, what was expected, what happened, and the likely cause.
 *
 * The downstream calls are counted by `downstreamRecorder()`: wrap your steps' `call` and
 * `lookup` with it.
 *
 * @example
 * await crashPointsGate({
 *   app: new URL('./paymentsTestApp.ts', import.meta.url),
 *   path: 'payments.create',
 *   input: (n) => ({ orderId: `order-${n}`, amountCents: 500 }),
 *   effect: (db) => countRows(db, 'charges'),
 * });
 */
export async function crashPointsGate(options: CrashPointsGateOptions): Promise<CrashPointsReport> {
  const appUrl = options.app instanceof URL ? options.app : toUrl(options.app);
  const appFile = fileURLToPath(appUrl);
  const loader = loaderArgs(appFile, options.loader);
  const app = await loadCrashApp(appUrl.href, options.exportName);
  const caller = options.caller;
  const timeoutMs = options.requestTimeoutMs ?? 15_000;
  const boundaries = new Set(options.boundaries ?? ALL_BOUNDARIES);
  const withCompleter = options.completer ?? true;
  const work = await mkdtemp(join(tmpdir(), 'idem-crash-'));
  const journal = join(work, 'journal.ndjson');
  const run = randomBytes(4).toString('hex');
  let postgres: IdemTestDatabase | undefined;
  try {
    if (options.databaseUrl) {
      postgres = await openIdemTestDatabase({
        databaseUrl: options.databaseUrl,
        freshDatabase: options.freshDatabase ?? true,
        poolSize: 2,
      });
    }
    const location: CrashDatabaseLocation = postgres
      ? { kind: 'postgres', url: postgres.url! }
      : { kind: 'pglite', dataDir: join(work, 'pglite') };
    const where = postgres ? 'PostgreSQL' : 'PGlite';
    if (location.kind === 'pglite') await createPgliteDirectory(location.dataDir);
    const onDatabase = async <T>(fn: (database: IdemTestDatabase) => Promise<T>): Promise<T> => {
      if (postgres) return fn(postgres);
      // PGlite: one process at a time, and every child has exited by now.
      const database = await openCrashDatabase(location);
      try {
        return await fn(database);
      } finally {
        await database.close();
      }
    };
    const effect = (database: IdemTestDatabase) =>
      options.effect(database.db, { count: (query) => database.count(query) });
    const input = (database: IdemTestDatabase) =>
      Promise.resolve(options.input({ seed: (lastSeed += 1), caller, db: database.db }));
    const [before, cleanInput] = await onDatabase(async (database) => {
      await app.definition.setup?.(database.db, { kind: database.kind });
      return [await effect(database), await input(database)] as const;
    });
    const base: CrashChildConfig = {
      app: appUrl.href,
      ...(options.exportName !== undefined ? { exportName: options.exportName } : {}),
      path: options.path,
      database: location,
    };
    const send = (child: CrashChild, key: string, input: unknown) =>
      request(app.definition, child.url, options.path, input, key, caller, timeoutMs);
    const problems: CrashProblem[] = [];
    const fail = (
      point: string,
      recovery: CrashProblem['recovery'],
      problem: Omit<CrashProblem, 'point' | 'recovery'>,
    ) => problems.push({ point, recovery, ...problem });

    // 1. One clean run: it must answer, and it shows the procedure's external steps.
    const probe = await spawnCrashChild(base, journal, loader);
    let steps: string[];
    try {
      if (withCompleter && !probe.hasCompleter) {
        throw new TypeError(
          '@idem/testing: crash points: your factory returns no `completer`: return `completer: () => idem.completer({ router, createContext: (record) => ... })` beside { router, createContext }, or run the gate with `completer: false`',
        );
      }
      const start = readJournal(journal).length;
      const answer = await send(probe, `crash-${run}-clean`, cleanInput);
      if (answer.status !== 200) {
        throw new CrashPointsGateError(options.path, where, [
          {
            point: 'no crash',
            recovery: null,
            expected: 'a clean run (no crash) to answer 200',
            happened: `it answered ${describeAnswer(answer)} ${answer.text.slice(0, 300)}${probe.stderr() ? `; the server wrote:\n${probe.stderr()}` : ''}`,
            cause:
              'the procedure fails without any crash: make the input valid and the caller allowed, then run the gate again',
          },
        ]);
      }
      const entries = readJournal(journal).slice(start);
      const claimed = entries.find((e) => e.kind === 'boundary' && e.boundary === 'claim');
      steps = [
        ...new Set(
          entries.flatMap((e) =>
            e.kind === 'boundary' &&
            e.boundary === 'intent' &&
            e.operationId === claimed?.operationId
              ? [e.step!]
              : [],
          ),
        ),
      ];
      if (steps.length === 0) {
        throw new CrashPointsGateError(options.path, where, [
          {
            point: 'no crash',
            recovery: null,
            expected: 'an external-mode procedure with at least one `ctx.idem.external` step',
            happened: 'a clean run recorded no external step',
            cause:
              "the procedure is not in external mode (`idem.procedure({ mode: 'external' })`), or makes its downstream call outside `ctx.idem.external`: the gate crashes around external steps",
          },
        ]);
      }
      if (!entries.some((e) => e.kind === 'call')) {
        throw new CrashPointsGateError(options.path, where, [
          {
            point: 'no crash',
            recovery: null,
            expected: 'the downstream calls of a clean run to be recorded',
            happened: 'none was',
            cause:
              "the steps' `call` is not wrapped in `downstreamRecorder().call(name, fn)`: the gate counts calls through it",
          },
        ]);
      }
    } finally {
      await probe[Symbol.asyncDispose]();
    }

    // 2. One process per crash run, killed at its point.
    const points = crashPointsOf(steps).filter((point) => boundaries.has(point.boundary));
    const recoveries = withCompleter ? (['retry', 'completer'] as const) : (['retry'] as const);
    const planned = points.flatMap((crash) => recoveries.map((recovery) => ({ crash, recovery })));
    const inputs = await onDatabase(async (database) => {
      const made: unknown[] = [];
      for (const _ of planned) made.push(await input(database));
      return made;
    });
    const runs: (CrashRun & { crash: CrashPoint; key: string; input: unknown })[] = [];
    for (const [index, { crash, recovery }] of planned.entries()) {
      const key = `crash-${run}-${index + 1}`;
      const input = inputs[index];
      const point = crashPointName(crash);
      const start = readJournal(journal).length;
      await using doomed = await spawnCrashChild({ ...base, crash }, journal, loader);
      const answer = await send(doomed, key, input).catch(() => null);
      const crashed = answer ? null : await doomed.exited;
      const entry = readJournal(journal)
        .slice(start)
        .find((e): e is Extract<JournalEntry, { kind: 'crash' }> => e.kind === 'crash');
      runs.push({
        point,
        recovery,
        crash,
        key,
        input,
        operationId: entry?.operationId ?? null,
        calls: 0,
        lookups: 0,
      });
      if (answer || crashed !== 'SIGKILL' || !entry) {
        fail(point, recovery, {
          expected: `the process to be killed at ${describeCrashPoint(crash)}`,
          happened: answer
            ? `the operation answered ${describeAnswer(answer)} without reaching that point`
            : `the process ended otherwise (${crashed ?? `exit code ${doomed.child.exitCode}`}):\n${doomed.stderr()}`,
          cause:
            'the procedure took another path than on its clean run: it must run the same steps in the same order every time',
        });
      }
    }

    // 3. One process arriving after the crashed leases: retries, then the completer.
    const crashedRuns = runs.filter((r) => r.operationId !== null);
    await using recovery = await spawnCrashChild(
      { ...base, shiftPast: crashedRuns.map((r) => r.operationId!) },
      journal,
      loader,
    );
    for (const r of crashedRuns.filter((r) => r.recovery === 'retry')) {
      const first = await send(recovery, r.key, r.input);
      if (first.status !== 200) {
        fail(r.point, 'retry', answerProblem(r.crash, r.operationId!, first, 'the retry'));
        continue;
      }
      const again = await send(recovery, r.key, r.input);
      if (!again.replayed || again.text !== first.text) {
        fail(r.point, 'retry', {
          expected:
            "a second retry to replay the first retry's answer byte for byte, with Idempotent-Replayed: true",
          happened: `it answered ${describeAnswer(again)}${again.replayed ? '' : ' (not a replay)'}`,
          cause:
            'the outcome of the recovered run was not stored: see the other problems of this point',
        });
      }
    }
    const completerRuns = crashedRuns.filter((r) => r.recovery === 'completer');
    if (completerRuns.length > 0) {
      const report = await recovery.complete();
      const abandoned = completerRuns.filter((r) => r.crash.boundary !== 'after-complete').length;
      if ('error' in report || report.taken !== abandoned || report.finished !== abandoned) {
        fail('every point', 'completer', {
          expected: `the completer to take and finish the ${abandoned} operations the crashes abandoned`,
          happened: `its run reported ${JSON.stringify(report)}`,
          cause:
            'see the problems of each point below; a failed run leaves the record for an operator or a later retry',
        });
      }
      for (const r of completerRuns) {
        const answer = await send(recovery, r.key, r.input);
        if (answer.status !== 200) {
          fail(
            r.point,
            'completer',
            answerProblem(r.crash, r.operationId!, answer, 'the retry after the completer'),
          );
        } else if (!answer.replayed) {
          fail(r.point, 'completer', {
            expected: 'the retry after the completer to replay the result the completer stored',
            happened: 'the retry ran the operation itself (no Idempotent-Replayed)',
            cause:
              "the completer did not finish it: is the procedure one of the completer's (`procedures`), and does its `createContext(record)` give the record's scope?",
          });
        }
      }
    }
    await recovery[Symbol.asyncDispose]();

    // 4. The journal: at most one call per downstream and operation.
    const entries = readJournal(journal);
    for (const r of crashedRuns) {
      const mine = entries.filter(
        (e): e is Extract<JournalEntry, { kind: 'call' | 'lookup' }> =>
          (e.kind === 'call' || e.kind === 'lookup') && e.operationId === r.operationId,
      );
      r.calls = mine.filter((e) => e.kind === 'call').length;
      r.lookups = mine.filter((e) => e.kind === 'lookup').length;
      const byName = new Map<string, number>();
      for (const e of mine)
        if (e.kind === 'call') byName.set(e.name, (byName.get(e.name) ?? 0) + 1);
      for (const [name, count] of byName) {
        if (count <= 1) continue;
        const step = r.crash.step === undefined ? 'the step' : `step "${r.crash.step}"`;
        const lookups = mine.filter(
          (e): e is Extract<JournalEntry, { kind: 'lookup' }> =>
            e.kind === 'lookup' && e.name === name,
        );
        fail(r.point, r.recovery, {
          expected: `the downstream "${name}" to be called at most once for operation ${r.operationId}`,
          happened: `it was called ${count === 2 ? 'twice' : `${count} times`} after ${describeCrashPoint(r.crash)}`,
          cause:
            lookups.length === 0
              ? `does ${step} have a lookup? None was recorded: give the step a \`lookup\` that finds the call by operation id (wrapped in \`recorder.lookup\`); a call made outside \`ctx.idem.external\` also runs again on every resume`
              : `does ${step} have a lookup that finds the call? Its lookup answered ${lookups.map((e) => (e.found === true ? 'found' : e.found === 'threw' ? 'with a throw' : 'not found')).join(', then ')} although the call had been made: it must find the call by the operation id passed downstream`,
        });
      }
    }

    // 5. The effect: one per operation.
    const moved = (await onDatabase(effect)) - before;
    const operations = 1 + runs.length;
    if (moved !== operations) {
      fail('every point', null, {
        expected: `the effect to move by exactly one per operation: ${operations}`,
        happened: `it moved by ${moved}`,
        cause:
          moved > operations
            ? 'work ran again on a resume: a write outside `ctx.idem.phase` (or its `tx`), or a downstream call repeated (see above), or an effect counter that counts something else'
            : "an operation's effect is missing: a crashed operation was not finished (see above), or the effect is written outside the steps idem records",
      });
    }
    if (problems.length > 0) throw new CrashPointsGateError(options.path, where, problems);
    return {
      steps,
      runs: runs.map(({ point, recovery, operationId, calls, lookups }) => ({
        point,
        recovery,
        operationId,
        calls,
        lookups,
      })),
      effect: { moved, operations },
    };
  } finally {
    await postgres?.close();
    await rm(work, { recursive: true, force: true });
  }
}

/** The last seed an input factory got; random at first, so two runs rarely share seeds. */
let lastSeed = Math.floor(Math.random() * 1_000_000) * 1_000;

const ALL_BOUNDARIES: readonly CrashBoundary[] = [
  'before-intent',
  'after-intent',
  'after-call',
  'before-complete',
  'after-complete',
];

function toUrl(app: string): URL {
  return /^file:/.test(app) ? new URL(app) : pathToFileURL(app);
}

function request(
  definition: IdemTestAppDefinition<AnyTRPCRouter>,
  url: string,
  path: string,
  input: unknown,
  key: string,
  caller: string,
  timeoutMs: number,
): Promise<IdemTestAnswer> {
  const { transformer, callerHeaders } = definition;
  return postMutation(
    { index: 0, url },
    path,
    JSON.stringify(transformer ? transformer.serialize(input) : input) ?? '',
    requestHeaders({ key, caller }, callerHeaders),
    timeoutMs,
  );
}

function describeAnswer(answer: IdemTestAnswer): string {
  const what = answer.reason ?? answer.message;
  return `${answer.status}${what ? ` ${what}` : ''}`;
}

/** What a retry's answer other than 200 means after a crash at `crash`. */
function answerProblem(
  crash: CrashPoint,
  operationId: string,
  answer: IdemTestAnswer,
  who: string,
): Omit<CrashProblem, 'point' | 'recovery'> {
  const expected = `${who} to answer 200 with the result of operation ${operationId}`;
  const happened = `it answered ${describeAnswer(answer)}`;
  const step = crash.step === undefined ? 'an external step' : `step "${crash.step}"`;
  if (answer.reason === 'IDEMPOTENCY_OUTCOME_UNKNOWN') {
    return {
      expected,
      happened,
      cause: `does ${step} have a lookup? Without one, idem cannot tell after ${describeCrashPoint(crash)} whether the call happened, and hands the operation to an operator: give the step a \`lookup\` that asks the downstream by operation id (wrapped in \`recorder.lookup\`)`,
    };
  }
  if (answer.reason === 'IDEMPOTENCY_OUTCOME_LOOKUP_PENDING') {
    return {
      expected,
      happened,
      cause: `the lookup of ${step} failed (it threw or ran out of time): it must answer found or not found`,
    };
  }
  if (answer.reason === 'IDEMPOTENCY_REQUEST_IN_PROGRESS') {
    return {
      expected,
      happened,
      cause:
        'the crashed attempt still held the key although the database clock was moved past its lease: does a step heartbeat or take longer than its lease?',
    };
  }
  return {
    expected,
    happened,
    cause:
      'the handler failed when resumed: it must run its steps in the same order every time and take what it needs from their results, not from anything the crashed process held',
  };
}
