import type { IdemMeta } from '@idem/contract';
import type { AnyTRPCRouter } from '@trpc/server';

/**
 * Why the crash points gate cannot run on `path` of `router`, or null when it can: it needs an
 * idempotent mutation in external mode that answers its result (not 202 accepted work).
 */
export function crashProcedureRefusal(router: AnyTRPCRouter, path: string): string | null {
  const procedures = router._def.procedures as Record<
    string,
    { _def?: { type?: string; meta?: IdemMeta } } | undefined
  >;
  const def = procedures[path]?._def;
  const gate = '@idem/testing: the crash points gate';
  if (!def) return `${gate}: your router has no procedure ${path}`;
  const idempotency = def.meta?.idempotency;
  if (def.type !== 'mutation' || !idempotency) {
    return `${gate}: ${path} is not an idempotent mutation: concatenate idem's procedure (.concat(idem.procedure({ mode: 'external' }))) to it`;
  }
  if (idempotency.mode !== 'external') {
    return `${gate}: ${path} is in local mode, where a crash rolls the whole attempt back: the gate is for external mode (idem.procedure({ mode: 'external' })), with ctx.idem.phase and ctx.idem.external steps`;
  }
  if (idempotency.respond === 'accepted') {
    return `${gate}: ${path} answers 202 accepted work (respond: 'accepted'): the gate checks what each retry answers, and runs on procedures that answer their result`;
  }
  return null;
}
