/**
 * The example's own tables: orders and payments (the API's resources), and the stand-in card
 * processor's ledger (a "remote" system that happens to live in the same database). idem's key
 * table is not here: it comes with `@idem/store-drizzle` and its own migrations.
 *
 * Migrations are generated from this file with `pnpm generate` (drizzle-kit) into `migrations/`.
 */
import { sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
  index,
  integer,
  pgTable,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';

export const orders = pgTable(
  'orders',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    sku: text('sku').notNull(),
    quantity: integer('quantity').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (table) => [index('orders_account_idx').on(table.accountId, table.createdAt)],
);

export const payments = pgTable(
  'payments',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    /** One payment per order: a second payment with a new key is refused (412), not charged. */
    orderId: text('order_id')
      .notNull()
      .references(() => orders.id),
    amountCents: integer('amount_cents').notNull(),
    currency: text('currency').notNull(),
    /** idem's operation id, also the processor's idempotency key for the charge. */
    operationId: text('operation_id').notNull(),
    /** `pending` once reserved, `paid` once the charge is recorded. */
    status: text('status').notNull(),
    chargeId: text('charge_id'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (table) => [
    uniqueIndex('payments_order_unique').on(table.orderId),
    uniqueIndex('payments_operation_unique').on(table.operationId),
    index('payments_account_idx').on(table.accountId, table.createdAt),
  ],
);

/**
 * The stand-in processor's charges. A de-duplicating processor keeps at most one per operation id
 * (its own de-duplication, `deduplicated` true); a lookup-only one (`IDEM_EXAMPLE_PROCESSOR=
 * lookup-only`) makes a charge for every call it receives, so a second call is a second charge.
 */
export const processorCharges = pgTable(
  'processor_charges',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    operationId: text('operation_id').notNull(),
    amountCents: integer('amount_cents').notNull(),
    currency: text('currency').notNull(),
    /** Made by the de-duplicating processor: unique per operation id. */
    deduplicated: boolean('deduplicated').notNull().default(true),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (table) => [
    uniqueIndex('processor_charges_operation_unique')
      .on(table.operationId)
      .where(sql`${table.deduplicated}`),
    index('processor_charges_operation_idx').on(table.operationId),
    index('processor_charges_account_idx').on(table.accountId),
  ],
);

/** Every call the processor received, charges and lookups, so anyone can count side effects. */
export const processorCalls = pgTable(
  'processor_calls',
  {
    id: bigint('id', { mode: 'number' }).primaryKey().generatedAlwaysAsIdentity(),
    accountId: text('account_id').notNull(),
    operationId: text('operation_id').notNull(),
    kind: text('kind', { enum: ['charge', 'lookup'] }).notNull(),
    at: timestamp('at', { withTimezone: true })
      .notNull()
      .default(sql`now()`),
  },
  (table) => [index('processor_calls_account_idx').on(table.accountId, table.kind)],
);
