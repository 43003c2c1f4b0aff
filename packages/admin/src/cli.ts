#!/usr/bin/env node
/**
 * idem-admin: operator tools for idempotency records on PostgreSQL (DATABASE_URL).
 * Every command prints JSON. Bodies and inputs hold user data: shown only with --show-bodies.
 */
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { createPostgresJsStore } from '@idem/store-drizzle/postgres-js';
import { drizzle } from 'drizzle-orm/postgres-js';
import postgres from 'postgres';
import { checkResolution, describeAuditFindings } from '@idem/server';
import { isAdminInputError } from './AdminInputError.js';
import { adminCommands, viewRecord, type AdminResolution } from './adminCommands.js';
import { auditModule } from './auditModule.js';
import { parseDuration } from './parseDuration.js';

const usage = `usage: idem-admin <command> [options]
  audit <module> [--export name]   exits 1 when a mutation of the router the module exports is
                                   undecided or idem is misplaced (lazy() routers included)
record commands (DATABASE_URL must be set):
  show <operationId> [--show-bodies]
  find --scope S --procedure P (--key K | --key-hash H) [--show-bodies]
                                   --key needs IDEM_KEY_SECRET: the app's keySecret
  stuck [--grace-ms 300000] [--limit 50]
  resolve <operationId> --state COMPLETED|TERMINAL_FAILURE|RETRYABLE_FAILURE --actor A --note N
          COMPLETED:        --body '<the procedure's output as JSON>' [--status 200]
                            --replay-window D --retention D
          TERMINAL_FAILURE: --body '{"code":"NOT_FOUND","message":"..."}' (a 4xx tRPC code)
                            [--status: the code's, e.g. 404; another is refused]
                            --replay-window D --retention D
          RETRYABLE_FAILURE: --retention D; no --status, --body or --replay-window
                            (the next retry runs again, resuming from the record's steps)
          --replay-window, --retention: the procedure's replayWindowMs and retentionMs (no
                            defaults; idem's are 24h and 72h), as durations: 7d, 24h, 90m, 30s,
                            1500ms. The retention is at least the replay window.
  history <operationId>            the audit rows of a record (resolutions by hand)
  reap [--limit 500]
  erase --scope S`;

// An unknown or malformed option is a usage error, not a crash.
const { positionals, values } = (() => {
  try {
    return parseArgs({
      allowPositionals: true,
      options: {
        scope: { type: 'string' },
        procedure: { type: 'string' },
        key: { type: 'string' },
        'key-hash': { type: 'string' },
        'grace-ms': { type: 'string', default: '300000' },
        limit: { type: 'string' },
        state: { type: 'string' },
        actor: { type: 'string' },
        note: { type: 'string' },
        status: { type: 'string' },
        body: { type: 'string' },
        'replay-window': { type: 'string' },
        retention: { type: 'string' },
        'show-bodies': { type: 'boolean', default: false },
        export: { type: 'string' },
        help: { type: 'boolean', default: false },
      },
    });
  } catch (error) {
    fail(error instanceof Error ? error.message : String(error));
  }
})();

function fail(message: string): never {
  process.stderr.write(`idem-admin: ${message}\n${usage}\n`);
  process.exit(2);
}
function required(name: keyof typeof values): string {
  const value = values[name];
  if (typeof value !== 'string' || value.length === 0) fail(`--${name} is required`);
  return value;
}
/** A duration option in milliseconds (`parseDuration`), or undefined when not given. */
function duration(name: 'replay-window' | 'retention'): number | undefined {
  const text = values[name];
  if (text === undefined) return undefined;
  return (
    parseDuration(text) ??
    fail(
      `--${name} must be a duration such as 7d, 24h, 90m, 30s or 1500ms, got ${JSON.stringify(text)}`,
    )
  );
}
/**
 * The resolution `--state` asks for, with the procedure's windows: required, never defaulted
 * (idem-admin cannot know a procedure's configuration, and a shorter window than the
 * procedure's lets a late retry run the work again).
 */
function resolutionOf(
  state: AdminResolution['state'],
  response: { status: number; body: string } | null,
): AdminResolution {
  const actor = required('actor');
  const note = required('note');
  const retention = () =>
    duration('retention') ??
    fail(
      `--retention is required for ${state}: pass the procedure's retentionMs, e.g. --retention 72h (idem's default). ${
        state === 'RETRYABLE_FAILURE'
          ? 'The released record and its steps are kept that long for the next retry'
          : 'The record is deleted that long after the resolution'
      }`,
    );
  if (state === 'RETRYABLE_FAILURE') {
    if (values['replay-window'] !== undefined) {
      fail(
        "RETRYABLE_FAILURE stores no response: drop --replay-window (give --retention, the procedure's retentionMs)",
      );
    }
    return { state, retentionMs: retention(), actor, note };
  }
  const replayWindowMs =
    duration('replay-window') ??
    fail(
      `--replay-window is required for ${state}: pass the procedure's replayWindowMs, e.g. --replay-window 24h (idem's default; 7d for a dead-letter queue's procedure). Retries get this response that long, and run the work again after it`,
    );
  const retentionMs = retention();
  if (retentionMs < replayWindowMs) {
    fail(
      `--retention (${values.retention}) must be at least --replay-window (${values['replay-window']}), as the server requires of a procedure's retentionMs and replayWindowMs`,
    );
  }
  // checkResolution gives COMPLETED and TERMINAL_FAILURE their response.
  return { state, response: response!, replayWindowMs, retentionMs, actor, note };
}

const [command, argument] = positionals;
if (values.help || !command) {
  process.stdout.write(`${usage}\n`);
  process.exit(values.help ? 0 : 2);
}
const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);

if (command === 'audit') {
  const file = argument ?? fail('give the module that exports your router');
  if (/^[0-9a-f]{8}-[0-9a-f]{4}-/i.test(file) && !existsSync(file)) {
    fail(
      `audit takes a module; the audit rows of operation ${file} are: idem-admin history ${file}`,
    );
  }
  let audit;
  try {
    audit = await auditModule(file, values.export);
  } catch (error) {
    fail(error instanceof Error ? error.message : String(error));
  }
  print(audit);
  const findings = describeAuditFindings(audit);
  for (const line of findings) process.stderr.write(`idem-admin audit: ${line}\n`);
  // exit() rather than return: the module may have opened handles (a pool, a timer).
  process.exit(findings.length > 0 ? 1 : 0);
}

const url = process.env.DATABASE_URL;
if (!url) fail('DATABASE_URL is not set');

const client = postgres(url, { max: 2, onnotice: () => {} });
const keySecret = process.env.IDEM_KEY_SECRET;
const admin = adminCommands(createPostgresJsStore(drizzle(client)) as never, {
  ...(keySecret ? { keySecret } : {}),
});
const show = values['show-bodies'];

try {
  switch (command) {
    case 'show': {
      const record = await admin.show(argument ?? fail('give the operation id'));
      if (!record) fail(`no record with operation id ${argument}`);
      print(viewRecord(record, show));
      break;
    }
    case 'find': {
      const record = await admin.find({
        scope: required('scope'),
        procedure: required('procedure'),
        ...(values.key !== undefined ? { key: values.key } : {}),
        ...(values['key-hash'] !== undefined ? { keyHash: values['key-hash'] } : {}),
      });
      if (!record) fail('no live record for that key');
      print(viewRecord(record, show));
      break;
    }
    case 'stuck': {
      const { report, records } = await admin.stuck(
        Number(values['grace-ms']),
        Number(values.limit ?? 50),
      );
      print({ report, records: records.map((r) => viewRecord(r, show)) });
      break;
    }
    case 'resolve': {
      const operationId = argument ?? fail('give the operation id');
      const state = required('state');
      if (state !== 'COMPLETED' && state !== 'TERMINAL_FAILURE' && state !== 'RETRYABLE_FAILURE') {
        fail('--state must be COMPLETED, TERMINAL_FAILURE or RETRYABLE_FAILURE');
      }
      const status = values.status === undefined ? undefined : Number(values.status);
      const checked = checkResolution({ state, status, body: values.body });
      if (!checked.ok) fail(checked.message);
      const resolution = resolutionOf(state, checked.response);
      const ok = await admin.resolve(operationId, resolution);
      if (!ok) fail('the record changed since it was read (or is already settled); look again');
      const { replayWindowMs, retentionMs } = resolution;
      print({
        resolved: operationId,
        state,
        ...(replayWindowMs !== undefined ? { replayWindowMs } : {}),
        retentionMs,
      });
      break;
    }
    case 'history':
      print(await admin.audit(argument ?? fail('give the operation id')));
      break;
    case 'reap':
      print({ deleted: await admin.reap(Number(values.limit ?? 500)) });
      break;
    case 'erase':
      print({ erased: await admin.erase(required('scope')) });
      break;
    default:
      fail(`unknown command ${command}`);
  }
} catch (error) {
  // What adminCommands refuses before writing (a key without IDEM_KEY_SECRET, ...): a usage error.
  if (isAdminInputError(error)) fail(error.message);
  throw error;
} finally {
  await client.end({ timeout: 2 });
}
