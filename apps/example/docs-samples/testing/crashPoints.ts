// The crash points test of docs/testing.md, verbatim between the markers.

// ---- verbatim from docs/testing.md: Crash points, the test ----
import { crashPointsGate } from '@idem/testing';
import { sql } from 'drizzle-orm';
import { it } from 'vitest';

it('payments.create survives a crash at every point', async () => {
  await crashPointsGate({
    app: new URL('./paymentsTestApp.ts', import.meta.url),
    path: 'payments.create',
    caller: 'alice',
    input: ({ seed }) => ({ orderId: `order-${seed}`, amountCents: 500 }),
    effect: (db, { count }) => count(sql`select 1 from fake_charges`),
    databaseUrl: process.env.DATABASE_URL, // PGlite without it
  });
}, 120_000);
// ---- end ----
