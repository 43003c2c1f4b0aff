import type { AnyTRPCRouter } from '@trpc/server';
import type { IdemMeta } from '@idem/contract';

/** One mutation the audit found, and how it is declared. */
export interface AuditedMutation {
  path: string;
  decision: 'idempotent' | 'retry-unsafe' | 'undecided';
}

/** The result of {@link auditRouter}. */
export interface RouterAudit {
  /** Every mutation of the router, sorted by path. */
  mutations: AuditedMutation[];
  /** Paths of mutations that neither declare idempotency nor are marked retry-unsafe. */
  undecided: string[];
}

/**
 * Lists every mutation of a router and whether it is idempotent, deliberately retry-unsafe, or
 * undecided. Fail CI on `undecided` so no new endpoint ships without a decision.
 */
export function auditRouter(router: AnyTRPCRouter): RouterAudit {
  const procedures = router._def.procedures as Record<
    string,
    { _def: { type: string; meta?: IdemMeta } }
  >;
  const mutations: AuditedMutation[] = Object.entries(procedures)
    .filter(([, procedure]) => procedure._def.type === 'mutation')
    .map(([path, procedure]) => {
      const meta = procedure._def.meta;
      const decision = meta?.idempotency
        ? 'idempotent'
        : meta?.retryUnsafe
          ? 'retry-unsafe'
          : 'undecided';
      return { path, decision } as const;
    })
    .sort((a, b) => a.path.localeCompare(b.path));
  return {
    mutations,
    undecided: mutations.filter((m) => m.decision === 'undecided').map((m) => m.path),
  };
}

/**
 * Throws, listing them, when a router has undecided mutations. For a test:
 * `it('every mutation is decided', () => assertRouterDecided(appRouter))`.
 */
export function assertRouterDecided(router: AnyTRPCRouter): void {
  const { undecided } = auditRouter(router);
  if (undecided.length > 0) {
    throw new Error(
      `mutations that neither declare idempotency nor are marked retryUnsafe():\n  ${undecided.join('\n  ')}`,
    );
  }
}
