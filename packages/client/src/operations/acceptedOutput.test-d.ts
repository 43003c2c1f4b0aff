/**
 * A `respond: 'accepted'` procedure answers 202 with `{ operationId, state }`, not the handler's
 * result: the client's output type says what the wire carries.
 */
import type { IdemMeta, RecordState, RecoveryStore } from '@idem/contract';
import {
  createIdempotency,
  operationStatusInput,
  type AcceptedOperation,
  type IdemContext,
  type OperationStatus,
} from '@idem/server';
import { createTRPCClient, httpLink } from '@trpc/client';
import { initTRPC, type inferRouterOutputs } from '@trpc/server';
import { expectTypeOf } from 'vitest';
import { z } from 'zod';
import { waitForOperation } from './waitForOperation.js';

const t = initTRPC.context<IdemContext>().meta<IdemMeta>().create();
const idem = createIdempotency({
  keySecret: 'k'.repeat(32),
  store: {} as RecoveryStore<unknown>,
  scope: () => 'acct',
});
const report = { rows: 12_000, url: 'https://reports.example/r/1' };
const router = t.router({
  exportReport: t.procedure
    .input(z.object({ month: z.string() }))
    .concat(idem.procedure({ mode: 'external', respond: 'accepted' }))
    .mutation(async () => report),
  exportNow: t.procedure
    .input(z.object({ month: z.string() }))
    .concat(idem.procedure({ mode: 'external' }))
    .mutation(async () => report),
  status: t.procedure.input(operationStatusInput).query(idem.operationStatusQuery),
});
type Outputs = inferRouterOutputs<typeof router>;

// Accepted: the wire carries the operation, never the handler's report.
expectTypeOf<Outputs['exportReport']>().toEqualTypeOf<AcceptedOperation>();
expectTypeOf<Outputs['exportReport']['state']>().toEqualTypeOf<RecordState>();
// A procedure that answers with its result keeps the handler's type.
expectTypeOf<Outputs['exportNow']>().toEqualTypeOf<typeof report>();

const client = createTRPCClient<typeof router>({
  links: [httpLink({ url: 'http://127.0.0.1:1/trpc' })],
});
export async function poll(): Promise<string> {
  const accepted = await client.exportReport.mutate({ month: '2026-11' });
  expectTypeOf(accepted).toEqualTypeOf<AcceptedOperation>();
  // @ts-expect-error the report is not on the wire: read it with the operation's status
  void accepted.rows;
  // The typed helper waits for the end within its deadline, typed by the status query.
  const status = await waitForOperation(client.status.query, accepted, { timeoutMs: 60_000 });
  expectTypeOf(status).toEqualTypeOf<OperationStatus>();
  return accepted.operationId;
}
