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
import { adminCommands, viewRecord } from './adminCommands.js';
import { auditModule } from './auditModule.js';

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
          TERMINAL_FAILURE: --body '{"code":"NOT_FOUND","message":"..."}' (a 4xx tRPC code)
                            [--status: the code's, e.g. 404; another is refused]
          RETRYABLE_FAILURE: no --status, no --body (the next retry runs again)
  history <operationId>            the audit rows of a record (resolutions by hand)
  reap [--limit 500]
  erase --scope S`;

const { positionals, values } = parseArgs({
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
    'show-bodies': { type: 'boolean', default: false },
    export: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});

function fail(message: string): never {
  process.stderr.write(`idem-admin: ${message}\n${usage}\n`);
  process.exit(2);
}
function required(name: keyof typeof values): string {
  const value = values[name];
  if (typeof value !== 'string' || value.length === 0) fail(`--${name} is required`);
  return value;
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
      const state = required('state');
      if (state !== 'COMPLETED' && state !== 'TERMINAL_FAILURE' && state !== 'RETRYABLE_FAILURE') {
        fail('--state must be COMPLETED, TERMINAL_FAILURE or RETRYABLE_FAILURE');
      }
      const status = values.status === undefined ? undefined : Number(values.status);
      const checked = checkResolution({ state, status, body: values.body });
      if (!checked.ok) fail(checked.message);
      const ok = await admin.resolve(argument ?? fail('give the operation id'), {
        state,
        actor: required('actor'),
        note: required('note'),
        ...(checked.response ? { response: checked.response } : {}),
      });
      if (!ok) fail('the record changed since it was read (or is already settled); look again');
      print({ resolved: argument, state });
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
} finally {
  await client.end({ timeout: 2 });
}
