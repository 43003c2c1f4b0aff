import { initTRPC, lazy } from '@trpc/server';
import { z } from 'zod';
import type { IdemMeta, RecoveryStore } from '@idem/contract';
import { describe, expect, it } from 'vitest';
import {
  assertRouterDecided,
  auditRouter,
  describeAuditFindings,
  findMisplacedIdempotency,
} from './auditRouter.js';
import { createIdempotency } from '../createIdempotency.js';
import type { IdemContext } from '../types/IdemRequest.js';
import { retrySafe } from './retrySafe.js';
import { retryUnsafe } from './retryUnsafe.js';

type Ctx = IdemContext & { account: string };
const t = initTRPC.context<Ctx>().meta<IdemMeta>().create();
// The audit reads procedure meta only; it never calls the store.
const store = {} as RecoveryStore<unknown>;
const idem = createIdempotency({
  keySecret: 'k'.repeat(32),
  store,
  scope: (ctx: Ctx) => ctx.account,
});

const router = t.router({
  orders: t.router({
    create: t.procedure.concat(idem.procedure()).mutation(() => 1),
    cancel: t.procedure.concat(retryUnsafe('cancels downstream on every call')).mutation(() => 1),
    rename: t.procedure.mutation(() => 1),
    archive: t.procedure.concat(retrySafe('sets archived = true')).mutation(() => 1),
    list: t.procedure.query(() => []),
  }),
  mail: t.router({
    send: t.procedure.concat(idem.procedure({ mode: 'external' })).mutation(() => 1),
  }),
});

describe('auditRouter', () => {
  it('lists every mutation with its decision, and the undecided ones', async () => {
    expect(await auditRouter(router)).toEqual({
      mutations: [
        { path: 'mail.send', decision: 'idempotent' },
        { path: 'orders.archive', decision: 'retry-safe', reason: 'sets archived = true' },
        {
          path: 'orders.cancel',
          decision: 'retry-unsafe',
          reason: 'cancels downstream on every call',
        },
        { path: 'orders.create', decision: 'idempotent' },
        { path: 'orders.rename', decision: 'undecided' },
      ],
      undecided: ['orders.rename'],
      misplaced: [],
    });
  });

  it('fails a test on an undecided mutation, naming it', async () => {
    await expect(assertRouterDecided(router)).rejects.toThrow(/orders\.rename/);
    await expect(
      assertRouterDecided(t.router({ a: t.procedure.concat(idem.procedure()).mutation(() => 1) })),
    ).resolves.toBeUndefined();
  });

  it('sees the mutations of lazy() routers, nested ones included', async () => {
    const inner = t.router({ undecided: t.procedure.mutation(() => 1) });
    const outer = t.router({
      keyed: t.procedure.concat(idem.procedure()).mutation(() => 1),
      deeper: lazy(async () => inner),
    });
    const app = t.router({ billing: lazy(async () => outer), ok: t.procedure.query(() => 1) });
    expect(await auditRouter(app)).toMatchObject({
      mutations: [
        { path: 'billing.deeper.undecided', decision: 'undecided' },
        { path: 'billing.keyed', decision: 'idempotent' },
      ],
      undecided: ['billing.deeper.undecided'],
    });
    await expect(assertRouterDecided(app)).rejects.toThrow(/billing\.deeper\.undecided/);
  });

  it('reports idem on a query or a subscription, an .input() after idem, and an .output() before it', async () => {
    const app = t.router({
      read: t.procedure.concat(idem.procedure()).query(() => 1),
      stream: t.procedure.concat(idem.procedure()).subscription(async function* () {
        yield 1;
      }),
      // A second object input merged in after idem compiles; the audit catches it.
      merged: t.procedure
        .input(z.object({ a: z.string() }))
        .concat(idem.procedure())
        .input(z.object({ b: z.string() }))
        .mutation(() => 1),
      fine: t.procedure
        .input(z.object({ a: z.string() }))
        .input(z.object({ b: z.string() }))
        .concat(idem.procedure())
        .output(z.object({ at: z.date() }))
        .mutation(() => ({ at: new Date(0) })),
      // An output parser in front of idem compiles; it would parse every replay again.
      outputFirst: t.procedure
        .input(z.object({ a: z.string() }))
        .output(z.object({ at: z.date() }))
        .concat(idem.procedure())
        .mutation(() => ({ at: new Date(0) })),
    });
    const { misplaced } = await auditRouter(app);
    expect(misplaced.map((m) => m.path)).toEqual(['merged', 'outputFirst', 'read', 'stream']);
    expect(misplaced.find((m) => m.path === 'outputFirst')?.problem).toMatch(
      /put \.output\(\) after \.concat\(idem\.procedure\(\)\)/,
    );
    expect(misplaced.find((m) => m.path === 'read')?.problem).toMatch(/on a query/);
    expect(misplaced.find((m) => m.path === 'stream')?.problem).toMatch(/on a subscription/);
    expect(misplaced.find((m) => m.path === 'merged')?.problem).toMatch(
      /put every \.input\(\) first/,
    );
    await expect(assertRouterDecided(app)).rejects.toThrow(/read: idem\.procedure\(\) on a query/);
  });

  it('accepts a retry-safe mutation as decided', async () => {
    const app = t.router({
      remove: t.procedure
        .input(z.object({ id: z.string() }))
        .concat(retrySafe('deletes by id'))
        .mutation(() => 1),
    });
    await expect(assertRouterDecided(app)).resolves.toBeUndefined();
    expect(describeAuditFindings(await auditRouter(app))).toEqual([]);
  });

  it('refuses retrySafe() beside idem.procedure() or retryUnsafe(), and on a query, naming the fix', async () => {
    const app = t.router({
      // Does not compile (see retrySafe.test-d.ts); built anyway, as JavaScript would.
      keyed: t.procedure
        .concat(retrySafe('sets the flag'))
        .concat(idem.procedure() as never)
        .mutation(() => 1),
      // Does not compile; built anyway, as JavaScript would.
      both: t.procedure
        .concat(retryUnsafe('charges on every call'))
        .concat(retrySafe('sets the flag') as never)
        .mutation(() => 1),
      read: t.procedure.concat(retrySafe('reads')).query(() => 1),
    });
    const audit = await auditRouter(app);
    expect(audit.undecided).toEqual([]);
    expect(audit.misplaced.map((m) => m.path)).toEqual(['both', 'keyed', 'read']);
    const findings = describeAuditFindings(audit);
    expect(findings).toEqual([
      expect.stringMatching(
        /^both: retrySafe\(\) and retryUnsafe\(\) together .* keep the one that is true$/,
      ),
      expect.stringMatching(
        /^keyed: retrySafe\(\) and idem\.procedure\(\) together: .*drop retrySafe\(\) if a second run could change anything, else drop idem\.procedure\(\)$/,
      ),
      expect.stringMatching(/^read: retrySafe\(\) on a query: .*drop retrySafe\(\)$/),
    ]);
    await expect(assertRouterDecided(app)).rejects.toThrow(/keyed: retrySafe\(\) and idem/);
    // The same check refuses it at start-up, without lazy() routers: the completer runs it.
    expect(findMisplacedIdempotency(app).map((m) => m.path)).toEqual(['both', 'keyed', 'read']);
    expect(() => idem.completer({ router: app, createContext: () => ({ account: 'a' }) })).toThrow(
      /keyed: retrySafe\(\) and idem\.procedure\(\) together/,
    );
  });

  it('refuses retryUnsafe without a reason and createIdempotency without a scope', () => {
    expect(() => retryUnsafe(' ')).toThrow(TypeError);
    expect(() => retrySafe('')).toThrow(/retrySafe: give the reason/);
    expect(() =>
      createIdempotency({ keySecret: 'k'.repeat(32), store, scope: undefined as never }),
    ).toThrow(/scope/);
  });

  it('refuses a retention shorter than the replay window', () => {
    expect(() => idem.procedure({ replayWindowMs: 10_000, retentionMs: 5_000 })).toThrow(
      /retentionMs/,
    );
  });
});
