/**
 * A small external-mode app for the crash points gate: `payments.create` reserves a payment (a
 * phase), charges a fake processor (an external step), and records the charge (a phase). The
 * processor lives in the same database and keeps one row per call it receives: it does not
 * de-duplicate, so only the step's lookup keeps one operation to one charge.
 *
 * The apps share it: `correctApp`, whose lookup finds the charge by operation id; two planted
 * mistakes, `withoutLookupApp` (no lookup) and `lookupNeverFindsApp` (a lookup that always
 * answers "not found"); `twoStepsApp`, with a second external step; and `noCompleterApp`,
 * whose factory returns no completer.
 */
import type { IdemMeta } from '@idem/contract';
import { createIdempotency, idemErrorFormatter, type IdemContext } from '@idem/server';
import { initTRPC, TRPCError } from '@trpc/server';
import { eq, sql } from 'drizzle-orm';
import { integer, pgTable, serial, text } from 'drizzle-orm/pg-core';
import { z } from 'zod';
import { defineIdemTestApp, downstreamRecorder, type IdemTestDb } from '../../src/index.js';

export const crashCharges = pgTable('crash_charges', {
  id: serial('id').primaryKey(),
  operationId: text('operation_id').notNull(),
  amount: integer('amount').notNull(),
});
const crashPayments = pgTable('crash_payments', {
  id: serial('id').primaryKey(),
  operationId: text('operation_id').notNull(),
  amount: integer('amount').notNull(),
  chargeId: text('charge_id'),
});

/** Charges the processor received: the gate's effect. */
export async function chargeCount(db: IdemTestDb): Promise<number> {
  const [row] = await db.select({ n: sql<number>`count(*)::int` }).from(crashCharges);
  return row!.n;
}

type Lookup = 'finds' | 'none' | 'never-finds';
type Variant = { lookup: Lookup; completer: boolean; receipt?: boolean };
type Context = IdemContext & { account: string | null };

function crashPaymentsApp({ lookup, completer, receipt = false }: Variant) {
  return defineIdemTestApp({
    setup: async (db) => {
      await db.execute(
        sql`create table crash_charges (id serial primary key, operation_id text not null, amount integer not null)`,
      );
      await db.execute(
        sql`create table crash_payments (id serial primary key, operation_id text not null, amount integer not null, charge_id text)`,
      );
      await db.execute(
        sql`create table crash_receipts (id serial primary key, operation_id text not null)`,
      );
    },
    create: ({ db, store }) => {
      const recorder = downstreamRecorder();
      const processor = {
        charge: async (operationId: string, amount: number) => {
          const [row] = await db.insert(crashCharges).values({ operationId, amount }).returning();
          return { chargeId: `ch_${row!.id}` };
        },
        find: async (operationId: string) => {
          const [row] = await db
            .select()
            .from(crashCharges)
            .where(eq(crashCharges.operationId, operationId));
          return row
            ? { found: true as const, result: { chargeId: `ch_${row.id}` } }
            : { found: false as const };
        },
      };
      const t = initTRPC
        .context<Context>()
        .meta<IdemMeta>()
        .create({ isDev: false, errorFormatter: idemErrorFormatter({ onMasked: () => {} }) });
      const idem = createIdempotency({
        store,
        keySecret: 'crash-points-test-key-secret-0123456789',
        scope: (ctx: Context) => ctx.account ?? '',
      });
      const authed = t.procedure.use(({ ctx, next }) => {
        if (!ctx.account) throw new TRPCError({ code: 'UNAUTHORIZED' });
        return next({ ctx: { account: ctx.account } });
      });
      const router = t.router({
        // A local-mode mutation: not one the crash points gate runs on.
        notes: t.router({
          add: authed
            .input(z.object({ text: z.string() }))
            .concat(idem.procedure())
            .mutation(({ input }) => ({ text: input.text })),
        }),
        payments: t.router({
          create: authed
            .input(z.object({ amount: z.number().int().positive() }))
            .concat(idem.procedure({ mode: 'external', leaseMs: 10_000 }))
            .mutation(async ({ ctx, input }) => {
              const payment = await ctx.idem.phase('reserve', async (tx) => {
                const [row] = await tx
                  .insert(crashPayments)
                  .values({ operationId: ctx.idem.operationId, amount: input.amount })
                  .returning();
                return { id: row!.id };
              });
              const charge = await ctx.idem.external('charge', {
                call: recorder.call('charge', (operationId) =>
                  processor.charge(operationId, input.amount),
                ),
                ...(lookup === 'finds'
                  ? { lookup: recorder.lookup('charge', processor.find) }
                  : lookup === 'never-finds'
                    ? {
                        lookup: recorder.lookup('charge', async () => ({ found: false as const })),
                      }
                    : {}),
              });
              if (receipt) {
                // A second external step: a mailer that also keeps one row per call.
                await ctx.idem.external('receipt', {
                  call: recorder.call('receipt', async (operationId) => {
                    await db.execute(
                      sql`insert into crash_receipts (operation_id) values (${operationId})`,
                    );
                    return { sent: true };
                  }),
                  lookup: recorder.lookup('receipt', async (operationId) => {
                    const sent = await db.execute(
                      sql`select 1 from crash_receipts where operation_id = ${operationId}`,
                    );
                    const rows = Array.isArray(sent) ? sent : (sent as { rows: unknown[] }).rows;
                    return rows.length > 0
                      ? { found: true as const, result: { sent: true } }
                      : { found: false as const };
                  }),
                });
              }
              return ctx.idem.phase('record', async (tx) => {
                await tx
                  .update(crashPayments)
                  .set({ chargeId: charge.chargeId })
                  .where(eq(crashPayments.id, payment.id));
                return { paymentId: payment.id, chargeId: charge.chargeId };
              });
            }),
        }),
      });
      return {
        router,
        createContext: ({ caller }) => ({ account: caller }),
        ...(completer
          ? {
              completer: () =>
                idem.completer({ router, createContext: (record) => ({ account: record.scope }) }),
            }
          : {}),
      };
    },
  });
}

export const correctApp = crashPaymentsApp({ lookup: 'finds', completer: true });
export const withoutLookupApp = crashPaymentsApp({ lookup: 'none', completer: true });
export const lookupNeverFindsApp = crashPaymentsApp({ lookup: 'never-finds', completer: true });
/** `correctApp` with a second external step, `receipt`, after the charge. */
export const twoStepsApp = crashPaymentsApp({ lookup: 'finds', completer: true, receipt: true });
/** A misuse: the factory returns no `completer`. */
export const noCompleterApp = crashPaymentsApp({ lookup: 'finds', completer: false });
