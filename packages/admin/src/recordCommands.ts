import { createPostgresJsStore } from '@idem/store-drizzle/postgres-js';
import { DrizzleQueryError } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/postgres-js';
import type postgres from 'postgres';
import { adminCommands, viewRecord } from './adminCommands.js';
import type { Invocation } from './commandLine.js';

/** The commands of `idem-admin` that read or write records, as the command line checked them. */
export type RecordInvocation = Exclude<Invocation, { command: 'help' | 'audit' }>;

/** What a record command printed, and its exit code (2: the record asked for is not there). */
export interface RecordOutcome {
  output?: unknown;
  refusal?: string;
  exitCode: 0 | 2;
}

/**
 * Runs a record command against `client` (already connected). Throws what the store throws; an
 * {@link AdminInputError} from `adminCommands` is a record that is not there.
 */
export async function runRecordCommand(
  client: postgres.Sql,
  invocation: RecordInvocation,
): Promise<RecordOutcome> {
  const keySecret = invocation.command === 'find' ? invocation.key?.keySecret : undefined;
  const admin = adminCommands(createPostgresJsStore(drizzle(client)), {
    ...(keySecret ? { keySecret } : {}),
  });
  const done = (output: unknown): RecordOutcome => ({ output, exitCode: 0 });
  const refused = (refusal: string): RecordOutcome => ({ refusal, exitCode: 2 });
  switch (invocation.command) {
    case 'show': {
      const record = await admin.show(invocation.operationId);
      if (!record) return refused(`no record with operation id ${invocation.operationId}`);
      return done(viewRecord(record, invocation.showBodies));
    }
    case 'find': {
      const { scope, procedure, key, keyHash } = invocation;
      const record = await admin.find({
        scope,
        procedure,
        ...(key ? { key: key.key } : { keyHash }),
      });
      if (!record) return refused('no live record for that key');
      return done(viewRecord(record, invocation.showBodies));
    }
    case 'stuck': {
      const { report, records } = await admin.stuck(invocation.graceMs, invocation.limit);
      return done({ report, records: records.map((r) => viewRecord(r, invocation.showBodies)) });
    }
    case 'resolve': {
      const { operationId, resolution } = invocation;
      if (!(await admin.resolve(operationId, resolution))) {
        return refused('the record changed since it was read (or is already settled); look again');
      }
      const { state, replayWindowMs, retentionMs } = resolution;
      return done({
        resolved: operationId,
        state,
        ...(replayWindowMs !== undefined ? { replayWindowMs } : {}),
        retentionMs,
      });
    }
    case 'history':
      return done(await admin.audit(invocation.operationId));
    case 'reap':
      return done({ deleted: await admin.reap(invocation.limit) });
    case 'erase':
      return done({ erased: await admin.erase(invocation.scope) });
  }
}

/**
 * The driver's error under a failed query: Drizzle's error quotes the whole statement and its
 * parameters, the driver's says why in a line. `error` itself for anything else.
 */
export function queryFailureCause(error: unknown): unknown {
  return error instanceof DrizzleQueryError && error.cause instanceof Error ? error.cause : error;
}
