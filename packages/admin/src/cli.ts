#!/usr/bin/env node
/**
 * idem-admin: operator tools for idempotency records on PostgreSQL (DATABASE_URL).
 * Every command prints JSON. Bodies and inputs hold user data: shown only with --show-bodies.
 *
 * Every failure is one line on stderr (its stack too with --verbose), and the exit code says
 * which kind: 1 an unexpected failure (or audit's findings), 2 a usage error or a record that is
 * not there, 3 a database that cannot be reached. The command line is checked whole before the
 * database is opened; what only a command needs (the store, a router's module) is loaded after,
 * so a usage error answers at once.
 */
import { isAdminInputError } from './AdminInputError.js';
import { parseCommandLine, type Invocation } from './commandLine.js';
import { wantsVerbose } from './commandOptions.js';
import {
  describeConnectionFailure,
  firstLine,
  openDatabase,
  type Database,
} from './databaseConnection.js';
import { USAGE } from './usage.js';

const EXIT = { done: 0, failed: 1, usage: 2, unreachable: 3 } as const;
const HELP_HINT = ' (see idem-admin --help)';

const argv = process.argv.slice(2);
const verbose = wantsVerbose(argv);
/** Set once the database is opened: a failure to reach it is then named by host and port. */
let database: Database | undefined;
/** Set once the record commands are loaded: how a failed query says why. */
let queryFailureCause: ((error: unknown) => unknown) | undefined;

const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);

/** Ends the process: `line` on stderr as one line, and with --verbose the stack of `error`. */
function exit(code: number, line?: string, error?: unknown): never {
  if (line !== undefined) {
    process.stderr.write(`idem-admin: ${line.replace(/\s*[\r\n]+\s*/g, ' ')}\n`);
  }
  if (verbose && error instanceof Error) {
    for (let e: unknown = error; e instanceof Error; e = e.cause) {
      process.stderr.write(`${e === error ? '' : 'caused by: '}${e.stack ?? e.message}\n`);
    }
  }
  process.exit(code);
}

/** Ends the process for `error` thrown while `doing`, with its one line and exit code. */
function failWith(error: unknown, doing: string): never {
  if (isAdminInputError(error)) exit(EXIT.usage, error.message);
  const unreachable = database && describeConnectionFailure(error, database);
  if (unreachable) exit(EXIT.unreachable, unreachable, error);
  const hint = verbose ? '' : ' (--verbose shows the stack)';
  exit(EXIT.failed, `${doing} failed: ${describeFailure(error)}${hint}`, error);
}

/** An unexpected failure in a few words: its name, its code and its message's first line. */
function describeFailure(error: unknown): string {
  const cause = queryFailureCause ? queryFailureCause(error) : error;
  if (!(cause instanceof Error)) return String(cause);
  const code = (cause as { code?: unknown }).code;
  const missingTable =
    code === '42P01' ? " (is idem's schema migrated in this database? see migrate())" : '';
  const name = `${cause.name}${typeof code === 'string' ? ` ${code}` : ''}`;
  return `${name}: ${firstLine(cause.message)}${missingTable}`;
}

process.on('uncaughtException', (error) => failWith(error, 'idem-admin'));
process.on('unhandledRejection', (error) => failWith(error, 'idem-admin'));

let invocation: Invocation;
try {
  invocation = await parseCommandLine(argv, process.env);
} catch (error) {
  if (!isAdminInputError(error)) failWith(error, 'reading the command line');
  exit(EXIT.usage, `${error.message}${HELP_HINT}`);
}

if (invocation.command === 'help') {
  process.stdout.write(`${USAGE}\n`);
  exit(EXIT.done);
}

if (invocation.command === 'audit') {
  // A router in TypeScript: the published CLI runs as plain JavaScript, so it loads tsx's loader
  // itself (a dependency of this package) before importing the module. Under the workspace's bin,
  // which runs through tsx already, registering again is harmless.
  if (/\.[mc]?tsx?$/.test(invocation.module)) (await import('tsx/esm/api')).register();
  const [{ auditModule }, { describeAuditFindings }] = await Promise.all([
    import('./auditModule.js'),
    import('@idem/server/operator'),
  ]);
  let audit;
  try {
    audit = await auditModule(invocation.module, invocation.exportName);
  } catch (error) {
    // No module there, or no router in it: the command line names the wrong one.
    if (isAdminInputError(error)) exit(EXIT.usage, `${error.message}${HELP_HINT}`);
    failWith(error, `audit of ${invocation.module}`);
  }
  print(audit);
  const findings = describeAuditFindings(audit);
  for (const line of findings) process.stderr.write(`idem-admin audit: ${line}\n`);
  // exit() rather than return: the module may have opened handles (a pool, a timer).
  exit(findings.length > 0 ? EXIT.failed : EXIT.done);
}

try {
  database = openDatabase(process.env);
} catch (error) {
  if (!isAdminInputError(error)) failWith(error, 'reading DATABASE_URL');
  exit(EXIT.usage, `${error.message}${HELP_HINT}`);
}
const { client } = database;
const records = await import('./recordCommands.js');
queryFailureCause = records.queryFailureCause;
try {
  // The connection first, alone: whatever fails here is the connection's, named by host and port.
  await client`SELECT 1`;
} catch (error) {
  exit(EXIT.unreachable, describeConnectionFailure(error, database, true), error);
}
let outcome;
try {
  outcome = await records.runRecordCommand(client, invocation);
} catch (error) {
  await client.end({ timeout: 2 }).catch(() => {});
  failWith(error, invocation.command);
}
await client.end({ timeout: 2 });
if (outcome.output !== undefined) print(outcome.output);
exit(outcome.exitCode, outcome.refusal);
