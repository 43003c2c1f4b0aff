/**
 * A transient failure after an external call releases the key; a retry inside the procedure's
 * windows (a week here, as for a dead-letter queue replayed by hand) comes after the contract's
 * default retention (72 h) and after a reaper run. It takes the same record over and resumes from
 * the recorded call: the call is not made again. Guards `release` in `completionStatements.ts`,
 * which once gave every released record a fixed 72 h cleanup time whatever the procedure's
 * retention: the reaper deleted it, and the retry made a fresh record, a new operation id and
 * the call again.
 */
import type { IdemMeta, RecoveryStore } from '@idem/contract';
import { postgresAvailable } from '@idem/fixtures';
import { initTRPC, TRPCError } from '@trpc/server';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createIdempotency, type IdemContext } from '../../src/index.js';
import { pgliteEnv, postgresEnv, type TestEnv } from '../fixtures/databases.js';
import { post, serve } from '../fixtures/httpHarness.js';
import { TEST_KEY_SECRET } from '../fixtures/testApp.js';

const available = await postgresAvailable();

type ChargeContext = IdemContext & { account: string | null };
const HOUR = 3_600_000;
const WEEK = 7 * 24 * HOUR;
const account = 'acct_released';

/** What the remote system saw, shared by every server of one test. */
interface Remote {
  calls: string[];
  /** Transient failures still to answer after the call (then it succeeds). */
  failures: number;
}

/** `charge`: one external call, then a transient failure while `remote.failures` lasts. */
function chargeRouter(store: RecoveryStore<any>, remote: Remote) {
  const t = initTRPC.context<ChargeContext>().meta<IdemMeta>().create();
  const idem = createIdempotency({
    keySecret: TEST_KEY_SECRET,
    store,
    scope: (ctx: ChargeContext) => ctx.account ?? '',
  });
  const windows = { mode: 'external', replayWindowMs: WEEK, retentionMs: WEEK } as const;
  return t.router({
    charge: t.procedure
      .input(z.object({ amount: z.number().int() }))
      .concat(idem.procedure(windows))
      .mutation(async ({ ctx, input }) => {
        const charge = await ctx.idem.external('charge', {
          call: async (operationId: string) => {
            remote.calls.push(operationId);
            return { chargeId: `ch_${remote.calls.length}` };
          },
        });
        if (remote.failures > 0) {
          remote.failures -= 1;
          throw new TRPCError({ code: 'SERVICE_UNAVAILABLE', message: 'try again' });
        }
        return { ...charge, amount: input.amount };
      }),
  });
}

async function retryAfterDefaultRetention(env: TestEnv) {
  const remote: Remote = { calls: [], failures: 1 };
  await using now = await serve(chargeRouter(env.store, remote));
  const first = await post(now.url, 'charge', { amount: 5 }, { key: 'k-week', account });
  expect(first.status).toBe(503);
  expect(remote.calls).toHaveLength(1);

  // 73 hours later: past the contract's default retention, well inside the procedure's week.
  const later = env.storeAt(73 * HOUR);
  await later.reap({ limit: 1_000 });
  await using retryServer = await serve(chargeRouter(later, remote));
  const retry = await post(retryServer.url, 'charge', { amount: 5 }, { key: 'k-week', account });
  expect(retry.status).toBe(200);
  expect(retry.json.result.data).toEqual({ chargeId: 'ch_1', amount: 5 });
  // One call, under the first attempt's operation id: the retry resumed from the recorded one.
  expect(remote.calls).toHaveLength(1);
}

describe('a released key retried past 72 h, inside the procedure retention', () => {
  it('PGlite: the reaper keeps it and the retry resumes without calling again', async () => {
    await using env = await pgliteEnv();
    await retryAfterDefaultRetention(env);
  });

  it.skipIf(!available)(
    'PostgreSQL: the reaper keeps it and the retry resumes without calling again',
    async () => {
      await using env = await postgresEnv();
      await retryAfterDefaultRetention(env);
    },
  );
});
