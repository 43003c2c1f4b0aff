import type { AnyTRPCRouter } from '@trpc/server';
import { isIdemMiddleware, isInputParser, isOutputParser } from './idemMiddlewareMark.js';
import { pendingLazyRouters, routerProcedures, type TRPCProcedureDef } from './trpcInternals.js';

/**
 * One mutation the audit found, and how it is declared: `idempotent` (`idem.procedure()`: takes a
 * key), `retry-safe` (`retrySafe()`: safe to retry by nature, no key), `retry-unsafe`
 * (`retryUnsafe()`: never retried once sent) or `undecided`.
 */
export interface AuditedMutation {
  path: string;
  decision: 'idempotent' | 'retry-safe' | 'retry-unsafe' | 'undecided';
  /** The reason given to `retrySafe()` or `retryUnsafe()`. */
  reason?: string;
}

/** A procedure where idem sits in a place it cannot work, and the fix. */
export interface MisplacedIdempotency {
  path: string;
  problem: string;
}

/** The result of {@link auditRouter}. */
export interface RouterAudit {
  /** Every mutation of the router, `lazy()` routers included, sorted by path. */
  mutations: AuditedMutation[];
  /** Paths of mutations that neither declare idempotency nor are marked retry-safe or -unsafe. */
  undecided: string[];
  /**
   * Procedures where `idem.procedure()` cannot work: on a query or a subscription, with an
   * `.input()` after it (such a procedure answers 500 on every call), or with an `.output()`
   * before it (its replays can answer 500). Also `retrySafe()` where it means nothing or
   * contradicts another decision: on a query or a subscription, or together with
   * `idem.procedure()` or `retryUnsafe()`. Fix them before shipping.
   */
  misplaced: MisplacedIdempotency[];
}

type ProcedureDef = TRPCProcedureDef;

/**
 * Loads every `lazy()` router of `router` (and the lazy routers those hold), so that its
 * procedure table is complete. tRPC loads them on their first call otherwise.
 */
async function loadLazyRouters(router: AnyTRPCRouter): Promise<void> {
  const lazy = pendingLazyRouters(router);
  for (let round = 0; Object.keys(lazy).length > 0; round++) {
    if (round > 1000) throw new Error('auditRouter: lazy routers keep adding lazy routers');
    await Promise.all(Object.values(lazy).map((loader) => loader.load()));
  }
}

/** `retrySafe()` where it means nothing, or beside another decision. */
function retrySafeMisuse(def: ProcedureDef): string | null {
  const meta = def.meta;
  if (!meta?.retrySafe) return null;
  if (def.type !== 'mutation') {
    return `retrySafe() on a ${def.type}: only mutations take a retry decision (the client link retries queries anyway); drop retrySafe()`;
  }
  if (meta.idempotency) {
    return 'retrySafe() and idem.procedure() together: a mutation either is safe to retry by nature or takes a key; drop retrySafe() if a second run could change anything, else drop idem.procedure()';
  }
  if (meta.retryUnsafe) {
    return 'retrySafe() and retryUnsafe() together contradict each other; keep the one that is true';
  }
  return null;
}

function misplacement(def: ProcedureDef): string | null {
  const misuse = retrySafeMisuse(def);
  if (misuse) return misuse;
  const middlewares = def.middlewares ?? [];
  const idemAt = middlewares.findIndex(isIdemMiddleware);
  if (idemAt === -1) return null;
  if (def.type !== 'mutation') {
    return `idem.procedure() on a ${def.type}: only mutations take idempotency keys; make it a mutation or drop idem.procedure()`;
  }
  if (middlewares.slice(idemAt + 1).some(isInputParser)) {
    return 'an .input() comes after .concat(idem.procedure()): the fingerprint would miss it; put every .input() first';
  }
  // Before idem, an output parser wraps it: a replay's output, read back through the serializer,
  // is parsed again, and what does not survive the round trip (a Date, with JSON) fails it: a
  // 500 for an operation that completed. After idem it parses the handler's output once, and idem
  // stores what it returns.
  if (middlewares.slice(0, idemAt).some(isOutputParser)) {
    return 'an .output() comes before .concat(idem.procedure()): replays would be validated again after the serializer (a Date comes back a string and fails); put .output() after .concat(idem.procedure())';
  }
  return null;
}

/**
 * The procedures of a router's loaded part where idem (or `retrySafe()`) is misplaced, without
 * loading `lazy()` routers: synchronous, for start-up checks (the completer runs it when it is
 * created).
 */
export function findMisplacedIdempotency(router: AnyTRPCRouter): MisplacedIdempotency[] {
  return routerProcedures(router)
    .sort(([a], [b]) => a.localeCompare(b))
    .flatMap(([path, def]) => {
      const problem = misplacement(def);
      return problem ? [{ path, problem }] : [];
    });
}

/**
 * Lists every mutation of a router (loading its `lazy()` routers) and whether it is idempotent,
 * safe to retry by nature, deliberately retry-unsafe, or undecided, and every procedure where
 * idem or `retrySafe()` is misplaced. Fail CI
 * on `undecided` and `misplaced`, so no new endpoint ships without a decision; `idem-admin audit`
 * does that from the command line.
 */
export async function auditRouter(router: AnyTRPCRouter): Promise<RouterAudit> {
  await loadLazyRouters(router);
  const entries = routerProcedures(router).sort(([a], [b]) => a.localeCompare(b));
  const mutations: AuditedMutation[] = entries
    .filter(([, def]) => def.type === 'mutation')
    .map(([path, def]): AuditedMutation => {
      const meta = def.meta;
      // A mutation with two decisions is reported under `misplaced`; here it shows the first.
      if (meta?.idempotency) return { path, decision: 'idempotent' };
      if (meta?.retrySafe) return { path, decision: 'retry-safe', reason: meta.retrySafe.reason };
      if (meta?.retryUnsafe) {
        return { path, decision: 'retry-unsafe', reason: meta.retryUnsafe.reason };
      }
      return { path, decision: 'undecided' };
    });
  const misplaced = findMisplacedIdempotency(router);
  return {
    mutations,
    undecided: mutations.filter((m) => m.decision === 'undecided').map((m) => m.path),
    misplaced,
  };
}

/** The audit's findings as lines for a person, empty when there is nothing to fix. */
export function describeAuditFindings(audit: RouterAudit): string[] {
  return [
    ...audit.undecided.map(
      (path) => `${path}: neither declares idempotency nor is marked retrySafe() or retryUnsafe()`,
    ),
    ...audit.misplaced.map(({ path, problem }) => `${path}: ${problem}`),
  ];
}

/**
 * Rejects, listing them, when a router has undecided mutations or misplaced idem procedures
 * (`retrySafe()` beside `idem.procedure()` or `retryUnsafe()` included).
 * For a test: `it('every mutation is decided', () => assertRouterDecided(appRouter))`.
 */
export async function assertRouterDecided(router: AnyTRPCRouter): Promise<void> {
  const findings = describeAuditFindings(await auditRouter(router));
  if (findings.length > 0) {
    throw new Error(`the router audit found:\n  ${findings.join('\n  ')}`);
  }
}
