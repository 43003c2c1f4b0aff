/**
 * Accepted (long-running) work whose handler fails transiently is released: RETRYABLE_FAILURE. No
 * queue or completer takes that state up again, so `waitForOperation` must end at once and say
 * what does move it: the original mutation, sent again with the same key. Against the real
 * middleware on PostgreSQL.
 */
import type { IncomingMessage } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { IdemMeta } from '@idem/contract';
import {
  createIdempotency,
  idemContext,
  idemResponseMeta,
  operationStatusInput,
  type IdemContext,
} from '@idem/server';
import { createPostgresJsStore, migrate } from '@idem/store-drizzle/postgres-js';
import { createTestDatabase, listen, postgresAvailable, type TestDatabase } from '@idem/fixtures';
import { createTRPCClient, httpBatchLink } from '@trpc/client';
import { initTRPC, TRPCError } from '@trpc/server';
import { createHTTPServer } from '@trpc/server/adapters/standalone';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  idemFetch,
  idemLink,
  isOperationReleasedError,
  OperationReleasedError,
  waitForOperation,
  withIdempotencyKey,
} from '@idem/client';

const available = await postgresAvailable();

function createReportsApp(db: ReturnType<typeof drizzle>) {
  const t = initTRPC.context<IdemContext>().meta<IdemMeta>().create();
  const idem = createIdempotency({
    keySecret: 'k'.repeat(32),
    store: createPostgresJsStore(db),
    scope: () => 'acct',
    statusLocation: '/trpc/reports.status',
  });
  const runs: string[] = [];
  let unavailable = true;
  const router = t.router({
    reports: t.router({
      export: t.procedure
        .input(z.object({ month: z.string() }))
        .concat(idem.procedure({ mode: 'external', respond: 'accepted' }))
        .mutation(async ({ input }) => {
          runs.push(input.month);
          if (unavailable) {
            unavailable = false;
            // A 503 is transient: idem releases the key (RETRYABLE_FAILURE), stores nothing.
            throw new TRPCError({ code: 'SERVICE_UNAVAILABLE', message: 'warehouse down' });
          }
          return { url: `r/${input.month}` };
        }),
      status: t.procedure.input(operationStatusInput).query(idem.operationStatusQuery),
    }),
  });
  const server = createHTTPServer({
    router,
    basePath: '/trpc/',
    createContext: ({ req }: { req: IncomingMessage }) => ({ ...idemContext(req) }),
    responseMeta: idemResponseMeta,
  });
  return { router, server, runs };
}

type ReportsRouter = ReturnType<typeof createReportsApp>['router'];

describe.skipIf(!available)('waitForOperation on released work (PostgreSQL)', () => {
  let database: TestDatabase;
  let sql: postgres.Sql;
  let app: ReturnType<typeof createReportsApp>;
  let server: Awaited<ReturnType<typeof listen>>;

  beforeAll(async () => {
    database = await createTestDatabase('idem_client_released');
    sql = postgres(database.url, { max: 5, onnotice: () => {} });
    const db = drizzle(sql);
    await migrate(db);
    app = createReportsApp(db);
    server = await listen(app.server);
  });
  afterAll(async () => {
    await server?.close();
    await sql?.end({ timeout: 2 });
    await database?.drop();
  });

  it('ends at once with OperationReleasedError; resending with the same key finishes the work', async () => {
    const url = `${server.origin}/trpc`;
    const trpc = createTRPCClient<ReportsRouter>({
      links: [
        idemLink<ReportsRouter>({ http: { url }, idempotent: { 'reports.export': true } }),
        httpBatchLink({ url, fetch: idemFetch() }),
      ],
    });
    const key = `report-${randomUUID()}`;
    const input = { month: '2026-11' };

    const accepted = await trpc.reports.export.mutate(input, withIdempotencyKey(key));
    const started = performance.now();
    const error = await waitForOperation(trpc.reports.status.query, accepted, {
      intervalMs: 20,
      timeoutMs: 20_000,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OperationReleasedError);
    expect(isOperationReleasedError(error)).toBe(true);
    expect((error as OperationReleasedError).operationId).toBe(accepted.operationId);
    expect(performance.now() - started).toBeLessThan(5_000); // not the 20 s deadline
    expect(app.runs).toEqual(['2026-11']);

    // Nothing on the server moves it on its own...
    await new Promise((resolve) => setTimeout(resolve, 200));
    const still = await trpc.reports.status.query({ operationId: accepted.operationId });
    expect(still.state).toBe('RETRYABLE_FAILURE');

    // ...the original mutation with the same key does, under the same operation.
    const again = await trpc.reports.export.mutate(input, withIdempotencyKey(key));
    expect(again.operationId).toBe(accepted.operationId);
    const status = await waitForOperation(trpc.reports.status.query, again, {
      intervalMs: 20,
      timeoutMs: 20_000,
    });
    expect(status.state).toBe('COMPLETED');
    expect(status.result).toEqual({ url: 'r/2026-11' });
    expect(app.runs).toEqual(['2026-11', '2026-11']);
  });
});
