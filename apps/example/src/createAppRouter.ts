import { randomBytes } from 'node:crypto';
import type { IdemMeta } from '@idem/contract';
import { createIdempotency, idemErrorFormatter } from '@idem/server';
import { initTRPC, TRPCError } from '@trpc/server';
import { and, asc, eq } from 'drizzle-orm';
import { z } from 'zod';
import type { AppContext } from './createContext.js';
import type { Faults } from './Faults.js';
import { describeErrorChain, logIdemEvent, type JsonLogger } from './jsonLogger.js';
import type { AppDb, AppStore } from './openDatabase.js';
import { orders, payments } from './schema.js';
import type { StandInProcessor } from './StandInProcessor.js';

export const CreateOrderInput = z.object({
  sku: z.string().min(1).max(64),
  quantity: z.number().int().min(1).max(1000),
});

export const CURRENCIES = ['USD', 'EUR', 'GBP', 'JPY', 'CNY'] as const;

export const CreatePaymentInput = z.object({
  orderId: z.string().min(1).max(64),
  amountCents: z.number().int().min(1).max(10_000_000),
  currency: z.enum(CURRENCIES),
});

/** What the router needs (configured once per process). */
export interface AppRouterOptions {
  db: AppDb;
  store: AppStore;
  processor: StandInProcessor;
  faults: Faults;
  log: JsonLogger;
  /** Lease of `payments.create` in milliseconds: how long a crashed worker blocks a retry. */
  leaseMs: number;
  /** idem's `keySecret`: the server secret idempotency keys are hashed with (HMAC). */
  keySecret: string;
}

const newId = (prefix: string) => `${prefix}_${randomBytes(8).toString('hex')}`;

type OrderRow = typeof orders.$inferSelect;
type PaymentRow = typeof payments.$inferSelect;

const toOrder = (row: OrderRow) => ({
  id: row.id,
  sku: row.sku,
  quantity: row.quantity,
  createdAt: row.createdAt.toISOString(),
});

const toPayment = (row: PaymentRow) => ({
  id: row.id,
  orderId: row.orderId,
  amountCents: row.amountCents,
  currency: row.currency,
  chargeId: row.chargeId,
  status: row.status,
});

/** The payments API: its router, and idem (for the completer and operation tools). */
export function createAppRouter(options: AppRouterOptions) {
  const { db, store, processor, faults } = options;
  // isDev: false keeps stack traces out of error responses (and out of stored failures). The
  // error formatter masks every 5xx: the caller gets `Internal server error; error id err_...`,
  // the log gets the same id with the error's names, codes and stack frames (never its message,
  // which can quote SQL parameters).
  const t = initTRPC
    .context<AppContext>()
    .meta<IdemMeta>()
    .create({
      isDev: false,
      errorFormatter: idemErrorFormatter({
        onMasked: ({ errorId, error, path, requestId }) =>
          options.log({
            msg: 'request.error',
            errorId,
            path,
            requestId,
            ...describeErrorChain(error),
          }),
      }),
    });

  const authed = t.procedure.use(({ ctx, next }) => {
    if (!ctx.accountId) {
      throw new TRPCError({
        code: 'UNAUTHORIZED',
        message: 'send Authorization: Bearer <token of your account>',
      });
    }
    return next({ ctx: { accountId: ctx.accountId } });
  });

  const idem = createIdempotency({
    store,
    keySecret: options.keySecret, // from the config: IDEM_EXAMPLE_KEY_SECRET
    // Keys are unique per account: another account's identical key is a different key.
    scope: (ctx: AppContext) => ctx.accountId ?? '',
    onEvent: logIdemEvent(options.log),
  });

  const router = t.router({
    orders: t.router({
      /** Local mode: the order row and its stored result (the key, taken at commit) commit together. */
      create: authed
        .input(CreateOrderInput)
        .concat(idem.procedure())
        .mutation(async ({ ctx, input }) => {
          const [row] = await ctx.idem.tx
            .insert(orders)
            .values({ id: newId('ord'), accountId: ctx.accountId, ...input })
            .returning();
          return toOrder(row!);
        }),
      list: authed.query(async ({ ctx }) =>
        (
          await db
            .select()
            .from(orders)
            .where(eq(orders.accountId, ctx.accountId))
            .orderBy(asc(orders.createdAt))
        ).map(toOrder),
      ),
    }),

    payments: t.router({
      /**
       * External mode, in three steps. A retry (or the completer) runs the handler again from the
       * top, and each committed step returns its recorded result instead of running again:
       *   reserve  (phase)     the order is checked and a pending payment row is written
       *   charge   (external)  the intent is recorded, then the processor is called with the
       *                        operation id as its idempotency key; after a crash between the
       *                        call and its record, the processor is asked (lookup) first
       *   record   (phase)     the payment is marked paid with the charge id
       */
      create: authed
        .input(CreatePaymentInput)
        .concat(idem.procedure({ mode: 'external', leaseMs: options.leaseMs }))
        .mutation(async ({ ctx, input }) => {
          const at = {
            origin: ctx.origin,
            operationId: ctx.idem.operationId,
            requestId: ctx.idem.requestId,
          };
          faults.reach('after-claim', at);
          const reserved = await ctx.idem.phase('reserve', async (tx) => {
            const [order] = await tx
              .select({ id: orders.id })
              .from(orders)
              .where(and(eq(orders.id, input.orderId), eq(orders.accountId, ctx.accountId)));
            // A 4xx is deterministic: stored, and replayed to every retry with this key.
            if (!order) {
              throw new TRPCError({ code: 'NOT_FOUND', message: `no order ${input.orderId}` });
            }
            const [payment] = await tx
              .insert(payments)
              .values({
                id: newId('pay'),
                accountId: ctx.accountId,
                operationId: ctx.idem.operationId,
                status: 'pending',
                ...input,
              })
              .onConflictDoNothing({ target: payments.orderId })
              .returning({ id: payments.id });
            // The business rule is the last line of defence: a new key cannot pay an order twice.
            if (!payment) {
              throw new TRPCError({
                code: 'PRECONDITION_FAILED',
                message: `order ${input.orderId} already has a payment`,
              });
            }
            return payment;
          });
          // The call's time limit defaults to half the lease (1.5 s with the example's 3 s); the
          // signal fires then, and the processor request is aborted with it.
          const charge = await ctx.idem.external('charge', {
            call: async (operationId, { signal }) => {
              const charged = await processor.charge(
                {
                  accountId: ctx.accountId,
                  operationId,
                  amountCents: input.amountCents,
                  currency: input.currency,
                },
                { signal },
              );
              faults.reach('after-charge-before-record', at);
              return charged;
            },
            lookup: (operationId, { signal }) =>
              processor.lookup(ctx.accountId, operationId, { signal }),
          });
          return ctx.idem.phase('record', async (tx) => {
            const [row] = await tx
              .update(payments)
              .set({ status: 'paid', chargeId: charge.chargeId })
              .where(eq(payments.id, reserved.id))
              .returning();
            faults.reach('before-commit', at);
            return toPayment(row!);
          });
        }),
      list: authed.query(async ({ ctx }) =>
        (
          await db
            .select()
            .from(payments)
            .where(eq(payments.accountId, ctx.accountId))
            .orderBy(asc(payments.createdAt))
        ).map(toPayment),
      ),
    }),

    processor: t.router({
      /** The stand-in processor's counts for the caller: proof of how often money moved. */
      stats: authed.query(({ ctx }) => processor.stats(ctx.accountId)),
    }),
  });

  return { router, idem };
}

export type AppRouter = ReturnType<typeof createAppRouter>['router'];
