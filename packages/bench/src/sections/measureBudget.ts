import { FIRST_ATTEMPT } from '../jobs.js';
import { mkdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import {
  attributeProfile,
  emptyCategories,
  type CpuProfile,
  type FunctionCost,
} from '../attributeProfile.js';
import type { StatementCounter } from '../benchControl.js';
import { cpuBetween, procCpu, processesNamed, threadIds, type ProcCpu } from '../procCpu.js';
import { startServer, type BenchServer } from '../processes.js';
import type { Category } from '../profileCategories.js';
import { spread } from '../stats.js';
import { measureStatements } from './measureStatements.js';
import { jobTimeout, keyPrefix, loopJob, type SectionContext } from './SectionContext.js';

const VARIANTS = ['plain', 'idem'] as const;
type Variant = (typeof VARIANTS)[number];

/** One variant's CPU per request, in µs, over all its profiled windows. */
export interface BudgetVariant {
  path: string;
  /** Requests its server answered in the profiled windows (counted by the server). */
  requests: number;
  /** Requests per second in the windows (median over the windows). */
  throughput: number;
  /**
   * The server main thread's CPU (`/proc/<pid>/task/<pid>/stat`), split by category in proportion
   * to V8's samples of it. `idle` is the sampled time the thread waited for events (wall time,
   * not CPU, not in the sum).
   */
  categories: Record<Category, number>;
  /** The main thread's CPU: the categories summed, `idle` left out. */
  mainThreadUs: number;
  /**
   * Wall time V8's samples saw the main thread busy. More than `mainThreadUs` when the thread was
   * preempted while running JS (2 shared cores): a sample lasts until the next one, on the clock.
   */
  sampledWallUs: number;
  /**
   * The server process, all threads (`/proc/<pid>/stat`: JIT, GC helpers, libuv) but the
   * profiler's sampling thread.
   */
  serverUs: number;
  /**
   * The profiler's sampling thread (the thread `profile/start` created), not in `serverUs`: a
   * cost per second (about 4% of a core when idle), so per request it grows as throughput falls.
   */
  profilerUs: number;
  /** The PostgreSQL backends of the bench database (`/proc`); null on PGlite. */
  postgresUs: number | null;
  /** How many backends of the bench database were read (at the end of the last window). */
  postgresBackends: number | null;
  /**
   * Every other `postgres` process on the machine (WAL writer, checkpointer, ... and other users'
   * work on a shared server); not in `totalUs`. Null on PGlite.
   */
  postgresRestUs: number | null;
  /** The load generator (`process.cpuUsage()` around its run). */
  loadGeneratorUs: number;
  /** `serverUs + postgresUs + loadGeneratorUs`. */
  totalUs: number;
  /** Statements Drizzle ran per request in the windows (BEGIN and COMMIT not included). */
  statementsPerRequest: number;
  /** `serverUs` of each window on its own: how noisy the number is. */
  serverUsByWindow: number[];
  /** The functions that fell into `other`, most first: where the categories could be better. */
  otherTop: FunctionCost[];
  /** The `.cpuprofile` of each window (open them in Chrome DevTools). */
  profiles: string[];
}

export interface BudgetResult {
  concurrency: number;
  windows: number;
  windowMs: number;
  /** Traffic each server got before its first window (not profiled). */
  warmupMs: number;
  samplingIntervalUs: number;
  plain: BudgetVariant;
  idem: BudgetVariant;
  /**
   * Statements per request on the wire, BEGIN and COMMIT included (PostgreSQL; null on PGlite),
   * from the `statements` section's counting, and Drizzle's count beside them.
   */
  roundTrips: {
    plain: number | null;
    idem: number | null;
    drizzlePlain: number;
    drizzleIdem: number;
  };
  /** The idempotent server's 20 functions with the most self time, in µs per request. */
  idemTop: FunctionCost[];
}

/** What one profiled window measured, summed over the windows of a variant. */
interface Totals {
  requests: number;
  statements: number;
  categories: Record<Category, number>;
  functions: Map<string, FunctionCost>;
  sampledWallUs: number;
  serverUs: number;
  profilerUs: number;
  postgresUs: number;
  postgresAllUs: number;
  postgresBackends: number;
  loadGeneratorUs: number;
  throughputs: number[];
  serverUsByWindow: number[];
  profiles: string[];
}

/**
 * The CPU each request costs, and where it goes: `plain.create` and `idem.create` (fresh key per
 * request, closed loop) each against a server process of their own, started with
 * `BENCH_CPU_PROFILE`. After a warm-up, each window restarts the server's V8 profiler, drives
 * `durationMs` of traffic, reads the CPU time of the server (and of its main thread), of the
 * database's backends and of the load generator from `/proc` and `process.cpuUsage()`, and
 * writes the profile, whose samples are attributed to categories by source URL
 * (`profileCategories.ts`); the main thread's CPU is split in proportion to them. Windows of the
 * two variants alternate, like the overhead section's runs. Everything is divided by the
 * requests the server counted in the window.
 */
export async function measureBudget(ctx: SectionContext): Promise<BudgetResult> {
  const { concurrency, windows, samplingIntervalUs } = ctx.profile.cpuBudget;
  const profileDir = join(dirname(ctx.options.out), 'profiles');
  await mkdir(profileDir, { recursive: true });
  const env = {
    ...ctx.serverEnv,
    BENCH_CPU_PROFILE: join(profileDir, `${ctx.options.db}-startup.cpuprofile`),
    BENCH_CPU_PROFILE_INTERVAL_US: String(samplingIntervalUs),
  };
  await using plainServer = await startServer(env);
  await using idemServer = await startServer(env);
  const servers: Record<Variant, BenchServer> = { plain: plainServer, idem: idemServer };
  const totals = {} as Record<Variant, Totals>;
  for (const variant of VARIANTS) {
    totals[variant] = {
      requests: 0,
      statements: 0,
      categories: emptyCategories(),
      functions: new Map(),
      sampledWallUs: 0,
      serverUs: 0,
      profilerUs: 0,
      postgresUs: 0,
      postgresAllUs: 0,
      postgresBackends: 0,
      loadGeneratorUs: 0,
      throughputs: [],
      serverUsByWindow: [],
      profiles: [],
    };
    ctx.log(`budget: warming the ${variant} server up for ${ctx.profile.serverWarmupMs} ms ...`);
    await ctx.worker.run(
      loopJob(ctx, {
        url: servers[variant].url,
        path: `${variant}.create`,
        keys: { kind: 'fresh', prefix: keyPrefix('bwarm') },
        concurrency,
        warmupMs: 0,
        durationMs: ctx.profile.serverWarmupMs,
      }),
      ctx.profile.serverWarmupMs + 60_000,
    );
  }

  for (let window = 0; window < windows; window++) {
    const order = window % 2 === 0 ? VARIANTS : ([...VARIANTS].reverse() as Variant[]);
    for (const variant of order) {
      const file = join(profileDir, `${ctx.options.db}-${variant}-${window + 1}.cpuprofile`);
      await profileWindow(ctx, servers[variant], variant, file, totals[variant]);
      const t = totals[variant];
      ctx.log(
        `budget ${variant.padEnd(5)} window ${window + 1}: ${t.throughputs.at(-1)!.toFixed(0)} req/s, server ${t.serverUsByWindow.at(-1)!.toFixed(0)} µs/request`,
      );
    }
  }

  const statements = await measureStatements(ctx);
  return {
    concurrency,
    windows,
    windowMs: ctx.profile.durationMs,
    warmupMs: ctx.profile.serverWarmupMs,
    samplingIntervalUs,
    plain: perRequest('plain', totals.plain, ctx.database !== null),
    idem: perRequest('idem', totals.idem, ctx.database !== null),
    roundTrips: {
      plain: statements.plain.wirePerRequest,
      idem: statements.fresh.wirePerRequest,
      drizzlePlain: statements.plain.perRequest,
      drizzleIdem: statements.fresh.perRequest,
    },
    idemTop: topFunctions(totals.idem, (f) => f.category !== 'idle', 20),
  };
}

/** One profiled window of `variant` against its server, added to `into`. */
async function profileWindow(
  ctx: SectionContext,
  server: BenchServer,
  variant: Variant,
  file: string,
  into: Totals,
): Promise<void> {
  const { pid } = await server.get<{ pid: number }>('info');
  await server.post('reset');
  const threads = new Set(threadIds(pid));
  await server.post('profile/start');
  const profilerThreads = threadIds(pid).filter((tid) => !threads.has(tid));
  const backendsBefore = (await ctx.database?.backendPids()) ?? [];
  const before = readCpu(pid, profilerThreads, backendsBefore);
  const result = await ctx.worker.run(
    loopJob(ctx, {
      url: server.url,
      path: `${variant}.create`,
      // As idem's client sends a fresh key (the plain variant ignores the header).
      keys: { kind: 'fresh', prefix: keyPrefix(`b-${variant}`), attempt: FIRST_ATTEMPT },
      concurrency: ctx.profile.cpuBudget.concurrency,
      warmupMs: 0,
    }),
    jobTimeout(ctx),
  );
  const backendsAfter = (await ctx.database?.backendPids()) ?? [];
  const after = readCpu(pid, profilerThreads, [...new Set([...backendsBefore, ...backendsAfter])]);
  const { counter } = await server.post<{ counter: StatementCounter }>('profile/stop', { file });

  if (counter.requests !== result.keysUsed || result.statuses['200'] !== result.requests) {
    throw new Error(
      `budget ${variant}: the server counted ${counter.requests} requests, the load generator sent ${result.keysUsed}, answers ${JSON.stringify(result.statuses)}`,
    );
  }
  const profile = attributeProfile(JSON.parse(await readFile(file, 'utf8')) as CpuProfile);
  // Samples measure wall time; the main thread's CPU is what they are the shares of.
  const busyUs = Object.entries(profile.byCategory)
    .filter(([category]) => category !== 'idle')
    .reduce((sum, [, us]) => sum + us, 0);
  const mainThreadUs = cpuBetween(before.mainThread, after.mainThread);
  const toCpu = (category: Category) =>
    category === 'idle' ? 1 : busyUs > 0 ? mainThreadUs / busyUs : 0;
  for (const [category, us] of Object.entries(profile.byCategory)) {
    into.categories[category as Category] += us * toCpu(category as Category);
  }
  for (const f of profile.functions) {
    const key = `${f.category}\u0000${f.name}\u0000${f.url}`;
    const entry = into.functions.get(key) ?? { ...f, us: 0 };
    entry.us += f.us * toCpu(f.category);
    into.functions.set(key, entry);
  }
  into.sampledWallUs += busyUs;
  const profilerUs = cpuBetween(before.profiler, after.profiler);
  const serverUs = cpuBetween(before.server, after.server) - profilerUs;
  into.profilerUs += profilerUs;
  into.requests += counter.requests;
  into.statements += counter.statements;
  into.serverUs += serverUs;
  into.postgresUs += cpuBetween(before.backends, after.backends);
  into.postgresAllUs += cpuBetween(before.postgres, after.postgres);
  into.postgresBackends = after.backends.length;
  into.loadGeneratorUs += result.cpuUs;
  into.throughputs.push(result.throughput);
  into.serverUsByWindow.push(serverUs / counter.requests);
  into.profiles.push(file);
}

/**
 * CPU so far of the server process, its main thread and its profiler's threads, of the bench
 * database's backends, and of every `postgres` process.
 */
function readCpu(serverPid: number, profilerThreads: number[], backendPids: number[]) {
  const present = (p: ProcCpu | null): p is ProcCpu => p !== null;
  return {
    server: [procCpu(serverPid)].filter(present),
    mainThread: [procCpu(serverPid, serverPid)].filter(present),
    profiler: profilerThreads.map((tid) => procCpu(serverPid, tid)).filter(present),
    backends: backendPids.map((p) => procCpu(p)).filter(present),
    postgres: backendPids.length > 0 ? processesNamed('postgres') : [],
  };
}

function perRequest(variant: Variant, t: Totals, postgres: boolean): BudgetVariant {
  const per = (us: number) => us / t.requests;
  const categories = Object.fromEntries(
    Object.entries(t.categories).map(([c, us]) => [c, per(us)]),
  ) as Record<Category, number>;
  const mainThreadUs = Object.entries(categories)
    .filter(([c]) => c !== 'idle')
    .reduce((sum, [, us]) => sum + us, 0);
  const serverUs = per(t.serverUs);
  const postgresUs = postgres ? per(t.postgresUs) : null;
  const loadGeneratorUs = per(t.loadGeneratorUs);
  return {
    path: `${variant}.create`,
    requests: t.requests,
    throughput: spread(t.throughputs).median,
    categories,
    mainThreadUs,
    sampledWallUs: per(t.sampledWallUs),
    serverUs,
    profilerUs: per(t.profilerUs),
    postgresUs,
    postgresBackends: postgres ? t.postgresBackends : null,
    postgresRestUs: postgres ? per(t.postgresAllUs - t.postgresUs) : null,
    loadGeneratorUs,
    totalUs: serverUs + (postgresUs ?? 0) + loadGeneratorUs,
    statementsPerRequest: t.statements / t.requests,
    serverUsByWindow: t.serverUsByWindow,
    otherTop: topFunctions(t, (f) => f.category === 'other', 5),
    profiles: t.profiles,
  };
}

function topFunctions(t: Totals, keep: (f: FunctionCost) => boolean, n: number): FunctionCost[] {
  return [...t.functions.values()]
    .filter(keep)
    .sort((a, b) => b.us - a.us)
    .slice(0, n)
    .map((f) => ({ ...f, us: f.us / t.requests }));
}
