/**
 * A user's data is erased (`eraseScope`) while an external-mode request of theirs is running.
 * Erasure changes no owner, so the worker still settles the record, but what it writes after the
 * erasure (the steps of its external call, the response) must not bring the user's data back.
 * Guards the `notErased` condition of `completionStatements.ts` (complete, fail) and
 * `recoveryStatements.ts` (saveSteps): the owner's writes once restored the erased columns, and a
 * retry was replayed the erased response.
 */
import type { IdemMeta, RecoveryStore } from '@idem/contract';
import { postgresAvailable } from '@idem/fixtures';
import { initTRPC, TRPCError } from '@trpc/server';
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createIdempotency, type IdemContext } from '../../src/index.js';
import { pgliteEnv, postgresEnv, type TestEnv } from '../fixtures/databases.js';
import { post, serve } from '../fixtures/httpHarness.js';
import { Gate, TEST_KEY_SECRET } from '../fixtures/testApp.js';

const available = await postgresAvailable();

type ChargeContext = IdemContext & { account: string | null };
const account = 'acct_erased';

/** What the remote system saw, and how the handler goes on after its call. */
interface Remote {
  calls: string[];
  /** Awaited before the external call: the test erases the scope meanwhile. */
  beforeCall: Promise<void>;
  /** After the call, fail transiently (the key is released) instead of completing. */
  failAfterCall: boolean;
  /** Instead of the call, one phase (a committed step with no external call), counted here. */
  phaseOnly?: { runs: number };
}

function chargeRouter(store: RecoveryStore<any>, remote: Remote) {
  const t = initTRPC.context<ChargeContext>().meta<IdemMeta>().create();
  const idem = createIdempotency({
    keySecret: TEST_KEY_SECRET,
    store,
    scope: (ctx: ChargeContext) => ctx.account ?? '',
  });
  return t.router({
    charge: t.procedure
      .input(z.object({ card: z.string() }))
      .concat(idem.procedure({ mode: 'external' }))
      .mutation(async ({ ctx, input }) => {
        await remote.beforeCall;
        if (remote.phaseOnly) {
          const phases = remote.phaseOnly;
          await ctx.idem.phase('reserve', async () => ++phases.runs);
          throw new TRPCError({ code: 'SERVICE_UNAVAILABLE', message: 'try again' });
        }
        const charge = await ctx.idem.external('charge', {
          call: async (operationId: string) => {
            remote.calls.push(operationId);
            return { chargeId: `ch_${remote.calls.length}`, card: input.card };
          },
        });
        if (remote.failAfterCall) {
          remote.failAfterCall = false;
          throw new TRPCError({ code: 'SERVICE_UNAVAILABLE', message: 'try again' });
        }
        return charge;
      }),
  });
}

async function recordOf(env: TestEnv) {
  const [row] = await env.db
    .execute(
      sql`select state, reconcile_reason, response_body, steps, input_text,
        erased_at is not null as erased
        from idem_records where scope = ${account}`,
    )
    .then((result: any) => (Array.isArray(result) ? result : result.rows));
  return row as Record<string, unknown>;
}

/** Starts a charge, erases the scope while it waits before its call, then lets it go on. */
async function chargeThroughErasure(
  env: TestEnv,
  failAfterCall: boolean,
  phaseOnly?: { runs: number },
) {
  const gate = new Gate();
  const remote: Remote = {
    calls: [],
    beforeCall: gate.opened,
    failAfterCall,
    ...(phaseOnly ? { phaseOnly } : {}),
  };
  await using server = await serve(chargeRouter(env.store, remote));
  const call = () => post(server.url, 'charge', { card: 'tok_visa' }, { key: 'k-erase', account });
  const running = call();
  await expect
    .poll(() => env.count(sql`select 1 from idem_records where scope = ${account}`))
    .toBe(1);
  expect(await env.store.eraseScope(account)).toBe(1);
  gate.open();
  const first = await running;
  return { first, retry: await call(), remote };
}

async function completedThenReplayed(env: TestEnv) {
  const { first, retry, remote } = await chargeThroughErasure(env, false);
  // The request that ran gets its result; nothing of it is kept for a replay.
  expect(first.status).toBe(200);
  expect(first.json.result.data).toEqual({ chargeId: 'ch_1', card: 'tok_visa' });
  expect(await recordOf(env)).toEqual({
    state: 'COMPLETED',
    reconcile_reason: null,
    response_body: null,
    steps: null,
    input_text: null,
    erased: true,
  });
  expect(retry.status).toBe(409);
  expect(retry.json.error.data.idem.reason).toBe('IDEMPOTENCY_REPLAY_UNAVAILABLE');
  expect(remote.calls).toHaveLength(1);
}

async function releasedThenRetried(env: TestEnv) {
  const { first, retry, remote } = await chargeThroughErasure(env, true);
  expect(first.status).toBe(503);
  // The retry finds a call begun and no record of it: an operator decides, nothing is re-run.
  expect(retry.status).toBe(409);
  expect(retry.json.error.data.idem.reason).toBe('IDEMPOTENCY_OUTCOME_UNKNOWN');
  expect(await recordOf(env)).toEqual({
    state: 'NEEDS_RECONCILIATION',
    reconcile_reason: 'erased_after_call',
    response_body: null,
    steps: null,
    input_text: null,
    erased: true,
  });
  expect(remote.calls).toHaveLength(1);
}

async function phaseReleasedThenRetried(env: TestEnv) {
  const phases = { runs: 0 };
  const { first, retry } = await chargeThroughErasure(env, false, phases);
  expect(first.status).toBe(503);
  // The phase committed after the erasure and its step was not kept: a re-run would repeat it.
  expect(retry.status).toBe(409);
  expect(retry.json.error.data.idem.reason).toBe('IDEMPOTENCY_OUTCOME_UNKNOWN');
  expect(await recordOf(env)).toMatchObject({
    state: 'NEEDS_RECONCILIATION',
    reconcile_reason: 'erased_after_step',
    steps: null,
    erased: true,
  });
  expect(phases.runs).toBe(1);
}

describe('an owner running through an erasure of its scope', () => {
  it('PGlite: released after a phase, the retry goes to an operator, never repeats the phase', async () => {
    await using env = await pgliteEnv();
    await phaseReleasedThenRetried(env);
  });

  it.skipIf(!available)(
    'PostgreSQL: released after a phase, the retry goes to an operator, never repeats the phase',
    async () => {
      await using env = await postgresEnv();
      await phaseReleasedThenRetried(env);
    },
  );

  it('PGlite: completes, stores nothing of the user; a retry is answered replay unavailable', async () => {
    await using env = await pgliteEnv();
    await completedThenReplayed(env);
  });

  it('PGlite: released after its call, the retry goes to an operator, never re-runs', async () => {
    await using env = await pgliteEnv();
    await releasedThenRetried(env);
  });

  it.skipIf(!available)(
    'PostgreSQL: completes, stores nothing of the user; a retry is answered replay unavailable',
    async () => {
      await using env = await postgresEnv();
      await completedThenReplayed(env);
    },
  );

  it.skipIf(!available)(
    'PostgreSQL: released after its call, the retry goes to an operator, never re-runs',
    async () => {
      await using env = await postgresEnv();
      await releasedThenRetried(env);
    },
  );
});
