import { initTRPC, TRPCError } from '@trpc/server';
import { createHash, randomUUID } from 'node:crypto';
import {
  DEFAULT_LOCK_TIMEOUT_MS,
  DEFAULT_REPLAY_WINDOW_MS,
  DEFAULT_RETENTION_MS,
  FINGERPRINT_VERSION,
  type IdemMeta,
  type OutcomeRecord,
  type RecoveryStore,
} from '@idem/contract';
import { createIdempotency, type IdemContext } from '@idem/server';
import { sql } from 'drizzle-orm';
import { integer, pgTable, serial, text, type PgDatabase } from 'drizzle-orm/pg-core';
import { z } from 'zod';

/** The business table both variants of the measured mutation write one row to. */
export const benchOrders = pgTable('bench_orders', {
  id: serial('id').primaryKey(),
  scope: text('scope').notNull(),
  sku: text('sku').notNull(),
  quantity: integer('quantity').notNull(),
});

export const createBenchTables = sql`
  create table if not exists bench_orders (
    id serial primary key, scope text not null, sku text not null, quantity integer not null
  )`;

export type BenchContext = IdemContext & { account: string | null };

/** The input every measured mutation takes. */
export const orderInput = z.object({
  sku: z.string().min(1).max(64),
  quantity: z.number().int().min(1).max(1000),
});
export type OrderInput = z.infer<typeof orderInput>;

/**
 * How many times each measured handler was invoked in this process: counted at the start of the
 * handler, so a run that is rolled back afterwards (a duplicate losing a commit-time claim)
 * counts too. The business rows count the committed executions.
 */
export interface HandlerInvocations {
  plain: number;
  idem: number;
}

/** Paths the server answers 503 to before tRPC sees them (the client's outage). */
export const OUTAGE_PATH = 'outage.create';

/**
 * The measured router. `plain.create` and `idem.create` run the same handler body (one INSERT
 * ... RETURNING, in a transaction) and return the same row; only idem's middleware differs.
 * The baseline opens its own transaction, as the idempotent one's runs in idem's, so that the
 * comparison prices idem's statements rather than a transaction.
 */
export function createBenchApp<TDb extends PgDatabase<any, any, any>>(
  db: TDb,
  store: RecoveryStore<any>,
  invocations: HandlerInvocations = { plain: 0, idem: 0 },
) {
  const t = initTRPC.context<BenchContext>().meta<IdemMeta>().create();
  const authed = t.procedure.use(({ ctx, next }) => {
    if (!ctx.account) throw new TRPCError({ code: 'UNAUTHORIZED' });
    return next({ ctx: { account: ctx.account } });
  });
  const idem = createIdempotency({
    keySecret: 'idem-bench-key-secret-0123456789abcdef',
    store,
    scope: (ctx: BenchContext) => ctx.account ?? '',
  });

  const insertOrder = async (runner: TDb, scope: string, input: OrderInput) => {
    const [row] = await runner
      .insert(benchOrders)
      .values({ scope, sku: input.sku, quantity: input.quantity })
      .returning();
    return row!;
  };

  return t.router({
    plain: t.router({
      create: authed.input(orderInput).mutation(({ ctx, input }) => {
        invocations.plain += 1;
        return db.transaction((tx) => insertOrder(tx as unknown as TDb, ctx.account, input));
      }),
    }),
    idem: t.router({
      create: authed
        .input(orderInput)
        .concat(idem.procedure())
        .mutation(({ ctx, input }) => {
          invocations.idem += 1;
          return insertOrder(ctx.idem.tx as TDb, ctx.account, input);
        }),
    }),
    /**
     * The floor of the idempotent mutation: the plain one's work and idem's record of it, written
     * by idem's store exactly as idem writes it (`commitWithRecord`: the record INSERT sent with
     * the COMMIT), with none of idem's middleware. What idem costs above this is its own code
     * and tRPC's extra middleware; what this costs above `plain` is the record itself. Keyed by
     * the request's Idempotency-Key as it comes (the bench's keys are unique per request).
     */
    floor: t.router({
      create: authed.input(orderInput).mutation(async ({ ctx, input }) => {
        const key = ctx.idemRequest?.keyValues[0];
        if (!key) throw new TRPCError({ code: 'BAD_REQUEST', message: 'floor.create needs a key' });
        const outcome = await store.commitWithRecord(async (tx) => {
          const row = await insertOrder(tx as TDb, ctx.account, input);
          return { value: row, record: floorRecord(ctx.account, key, JSON.stringify(row)) };
        });
        if (outcome.kind !== 'recorded') {
          throw new TRPCError({ code: 'CONFLICT', message: `floor.create: key ${outcome.kind}` });
        }
        return outcome.value;
      }),
    }),
    /** No database at all: isolates the client link's own cost. */
    echo: authed.input(orderInput).mutation(({ input }) => ({ id: 0, scope: 'echo', ...input })),
    outage: t.router({
      /** Never reached: the server answers 503 first. Idempotent, so the link retries it. */
      create: authed
        .input(orderInput)
        .concat(idem.procedure())
        .mutation(() => ({ id: 0, scope: 'outage', sku: '', quantity: 0 })),
    }),
  });
}

/**
 * The record `floor.create` writes: what idem stores for a request, its key hashed as idem's is
 * (SHA-256 here, not idem's HMAC: the same width, and as scattered). The bench's keys written
 * out in clear (a prefix and a counter) cluster in a few leaves of the live-key index, mostly
 * the rightmost, which PostgreSQL inserts into on a fast path; idem's hashes land anywhere in it
 * (measured: PostgreSQL spent about 25 µs less per request on clear keys than on idem's).
 */
function floorRecord(scope: string, key: string, body: string): OutcomeRecord {
  return {
    scope,
    procedure: 'floor.create',
    keyHash: createHash('sha256').update(`${key.length}:${key}`).digest('hex'),
    fingerprint: FLOOR_FINGERPRINT,
    fingerprintVersion: FINGERPRINT_VERSION,
    operationId: timeOrderedUuid(),
    state: 'COMPLETED',
    response: {
      status: 200,
      body,
      replayWindowMs: DEFAULT_REPLAY_WINDOW_MS,
      retentionMs: DEFAULT_RETENTION_MS,
    },
    lockTimeoutMs: DEFAULT_LOCK_TIMEOUT_MS,
  };
}
/**
 * An operation id ordered by time as idem's server makes them (UUID version 7: the milliseconds,
 * then random bits), so the floor's entry in the operation ids' unique index lands at its right
 * edge as idem's does. Here the random bits are `randomUUID()`'s, behind the time and the version.
 */
function timeOrderedUuid(): string {
  const time = Date.now().toString(16).padStart(12, '0');
  return `${time.slice(0, 8)}-${time.slice(8)}-7${randomUUID().slice(15)}`;
}

/** As long as a real fingerprint (SHA-256, hex), so the row is as wide as idem's. */
const FLOOR_FINGERPRINT = 'f'.repeat(64);

export type BenchRouter = ReturnType<typeof createBenchApp>;
