import { AdminInputError } from './AdminInputError.js';
import type { AdminResolution } from './adminCommands.js';
import { CONNECT_TIMEOUT_S } from './databaseConnection.js';
import { parseDuration } from './parseDuration.js';

/*
 * idem-admin's command line, read and checked whole before anything is opened: every misuse
 * (an unknown command or option, a missing or malformed value, an option given twice) throws an
 * AdminInputError whose message is one line saying what is wrong and what is expected. No
 * database is reached until the line is known to be right. The contract and the server are
 * loaded only by the commands whose checks need them (find, resolve): a usage error answers at
 * once.
 */

export const USAGE = `usage: idem-admin <command> [options] [--verbose]
  audit <module> [--export name]   exits 1 when a mutation of the router the module exports is
                                   undecided or idem is misplaced (lazy() routers included)
record commands (DATABASE_URL must be set):
  show <operationId> [--show-bodies]
  find --scope S --procedure P (--key K | --key-hash H) [--show-bodies]
                                   --key needs IDEM_KEY_SECRET: the app's keySecret
  stuck [--grace-ms 300000] [--limit 50] [--show-bodies]
                                   --grace-ms: 0 to 3153600000000 (100 years); --limit: 1 to 10000
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
                            1500ms, at most 36500d. The retention is at least the replay window.
  history <operationId>            the audit rows of a record (resolutions by hand)
  reap [--limit 500]               --limit: 1 to 10000
  erase --scope S
  operation ids are uuids (47e280e2-ca40-4b44-8448-51622564c56e); each option is given once
global options:
  --verbose                        print the stack trace of a failure
  --help, -h                       print this help
exit codes:
  0  done (audit: every mutation decided)
  1  audit found an undecided or misplaced mutation, or an unexpected failure (one line;
     the stack with --verbose)
  2  a usage error (unknown command or option, a missing or malformed value, DATABASE_URL
     not set), or the record asked for does not exist or changed meanwhile; nothing written
  3  the database cannot be reached: refused, unknown host, no answer within the connect
     timeout (${CONNECT_TIMEOUT_S} s; ?connect_timeout=N in DATABASE_URL or PGCONNECT_TIMEOUT),
     or the login refused`;

/** The largest `--limit`: one statement's batch, well inside what the store takes (2^31 - 1). */
export const MAX_LIMIT = 10_000;
/**
 * The longest `--grace-ms`, `--replay-window` and `--retention`: 100 years. The database's clock
 * minus some 6,700 years leaves PostgreSQL's timestamps (4713 BC), and a record kept some 274,000
 * years is dated past what a JavaScript Date reads.
 */
export const MAX_WINDOW_MS = 36_500 * 86_400_000;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const EXAMPLE_ID = '47e280e2-ca40-4b44-8448-51622564c56e';
const STATES = ['COMPLETED', 'TERMINAL_FAILURE', 'RETRYABLE_FAILURE'] as const;

/** Every option, with what its value is (`undefined`: a flag, which takes none). */
const OPTIONS = {
  scope: 'a scope',
  procedure: 'a procedure path',
  key: 'an idempotency key',
  'key-hash': 'a key hash',
  'grace-ms': `a whole number of milliseconds from 0 to ${MAX_WINDOW_MS} (100 years)`,
  limit: `a whole number from 1 to ${MAX_LIMIT}`,
  state: 'COMPLETED, TERMINAL_FAILURE or RETRYABLE_FAILURE',
  actor: 'a name',
  note: 'a note',
  status: 'an HTTP status from 100 to 599',
  body: 'a JSON body',
  'replay-window': 'a duration such as 24h',
  retention: 'a duration such as 72h',
  export: 'an export name',
  'show-bodies': undefined,
  verbose: undefined,
  help: undefined,
} as const;
type OptionName = keyof typeof OPTIONS;
const GLOBAL_OPTIONS: readonly OptionName[] = ['verbose', 'help'];

/** Each command: what its one argument is, if it takes one, and the options it reads. */
const COMMANDS = {
  audit: { argument: 'module', options: ['export'] },
  show: { argument: 'operationId', options: ['show-bodies'] },
  find: { options: ['scope', 'procedure', 'key', 'key-hash', 'show-bodies'] },
  stuck: { options: ['grace-ms', 'limit', 'show-bodies'] },
  resolve: {
    argument: 'operationId',
    options: ['state', 'actor', 'note', 'status', 'body', 'replay-window', 'retention'],
  },
  history: { argument: 'operationId', options: [] },
  reap: { options: ['limit'] },
  erase: { options: ['scope'] },
} as const satisfies Record<
  string,
  { argument?: 'module' | 'operationId'; options: readonly OptionName[] }
>;
type CommandName = keyof typeof COMMANDS;

/** What the command line asks for, checked. */
export type Invocation =
  | { command: 'help' }
  | { command: 'audit'; module: string; exportName?: string }
  | { command: 'show'; operationId: string; showBodies: boolean }
  | {
      command: 'find';
      scope: string;
      procedure: string;
      key?: { key: string; keySecret: string };
      keyHash?: string;
      showBodies: boolean;
    }
  | { command: 'stuck'; graceMs: number; limit: number; showBodies: boolean }
  | { command: 'resolve'; operationId: string; resolution: AdminResolution }
  | { command: 'history'; operationId: string }
  | { command: 'reap'; limit: number }
  | { command: 'erase'; scope: string };

/** The command line split: its options by name (a flag as true) and its arguments. */
interface Tokens {
  values: Map<OptionName, string | true>;
  positionals: string[];
}

function refuse(message: string): never {
  throw new AdminInputError(message);
}

/** Whether `--verbose` is on the line (before a `--`), however the rest of it reads. */
export function wantsVerbose(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  return (end === -1 ? argv : argv.slice(0, end)).includes('--verbose');
}

/** The closest of `names` to `name` (at most two edits away), for a "did you mean". */
function closest(name: string, names: readonly string[]): string | undefined {
  const distance = (a: string, b: string) => {
    let row = Array.from({ length: b.length + 1 }, (_, j) => j);
    for (let i = 1; i <= a.length; i++) {
      const next = [i];
      for (let j = 1; j <= b.length; j++) {
        next[j] = Math.min(
          row[j]! + 1,
          next[j - 1]! + 1,
          row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
        );
      }
      row = next;
    }
    return row[b.length]!;
  };
  let best: string | undefined;
  let bestDistance = 3;
  for (const candidate of names) {
    const d = distance(name, candidate);
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return best;
}

const isOption = (name: string): name is OptionName => Object.hasOwn(OPTIONS, name);

/** Splits the line into options and arguments; refuses unknown, repeated and valueless options. */
function tokenize(argv: readonly string[]): Tokens {
  const values = new Map<OptionName, string | true>();
  const positionals: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (arg === '-h') {
      values.set('help', true);
      continue;
    }
    if (!arg.startsWith('-') || arg === '-' || /^-[0-9]/.test(arg)) {
      positionals.push(arg);
      continue;
    }
    if (!arg.startsWith('--')) {
      refuse(`unknown option ${JSON.stringify(arg)}: options are long, such as --limit 50`);
    }
    const equals = arg.indexOf('=');
    const name = equals === -1 ? arg.slice(2) : arg.slice(2, equals);
    if (!isOption(name)) {
      const guess = closest(name, Object.keys(OPTIONS));
      refuse(`unknown option --${name}${guess ? ` (did you mean --${guess}?)` : ''}`);
    }
    let value: string | true;
    const takes = OPTIONS[name];
    if (takes === undefined) {
      if (equals !== -1) refuse(`--${name} takes no value, got ${JSON.stringify(arg)}`);
      value = true;
    } else if (equals !== -1) {
      value = arg.slice(equals + 1);
    } else {
      const next = argv[i + 1];
      // A value never starts with "--": that is the next option, and this one lacks its value.
      if (next === undefined || next.startsWith('--')) {
        refuse(
          next === undefined
            ? `--${name} needs a value after it: ${takes}`
            : `--${name} needs a value before ${next}: ${takes} (--${name}=... for a value starting with --)`,
        );
      }
      value = next;
      i++;
    }
    if (values.has(name)) {
      if (takes === undefined) refuse(`--${name} is given twice: give it once`);
      refuse(
        `--${name} is given twice (${JSON.stringify(values.get(name))} and ${JSON.stringify(value)}): give it once`,
      );
    }
    values.set(name, value);
  }
  return { values, positionals };
}

/** A whole number from `min` to `max`, or a usage error naming the option and what it takes. */
function wholeNumber(option: OptionName, text: string, min: number, max: number): number {
  const value = /^[0-9]+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    refuse(`--${option} takes ${OPTIONS[option]}, got ${JSON.stringify(text)}`);
  }
  return value;
}

function operationIdOf(command: CommandName, text: string): string {
  if (!UUID.test(text)) {
    refuse(
      `${command} takes an operation id, a uuid such as ${EXAMPLE_ID}, got ${JSON.stringify(text)}`,
    );
  }
  return text;
}

/**
 * Reads and checks the whole command line: `argv` without node and the script, `env` for
 * IDEM_KEY_SECRET. Throws an {@link AdminInputError} on any misuse, before anything is opened.
 */
export async function parseCommandLine(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<Invocation> {
  const { values, positionals } = tokenize(argv);
  if (values.has('help')) return { command: 'help' };
  const [command, ...rest] = positionals;
  const commands = Object.keys(COMMANDS);
  if (command === undefined) refuse(`give a command: ${commands.join(', ')}`);
  if (!Object.hasOwn(COMMANDS, command)) {
    const guess = closest(command, commands);
    refuse(
      `unknown command ${JSON.stringify(command)}${guess ? ` (did you mean ${guess}?)` : ''}; the commands: ${commands.join(', ')}`,
    );
  }
  const name = command as CommandName;
  const spec: { argument?: 'module' | 'operationId'; options: readonly OptionName[] } =
    COMMANDS[name];

  for (const option of values.keys()) {
    if (!spec.options.includes(option) && !GLOBAL_OPTIONS.includes(option)) {
      const own = spec.options.map((o) => `--${o}`).join(', ');
      refuse(
        `${name} takes no --${option}; ${own ? `its options: ${own}` : 'it takes no options'}`,
      );
    }
  }
  const what =
    spec.argument === 'module' ? 'the module that exports your router' : 'an operation id';
  if (spec.argument === undefined && rest.length > 0) {
    refuse(`${name} takes no arguments, got ${rest.map((r) => JSON.stringify(r)).join(' ')}`);
  }
  if (spec.argument !== undefined && rest.length === 0) {
    refuse(`${name} takes ${what}: idem-admin ${name} <${spec.argument}>`);
  }
  if (rest.length > 1) {
    refuse(
      `${name} takes one argument, ${what}, got ${rest.length}: ${rest.map((r) => JSON.stringify(r)).join(' ')}`,
    );
  }
  const argument = rest[0]!;

  const text = (option: OptionName): string | undefined => {
    const value = values.get(option);
    if (value === undefined) return undefined;
    if (value === true || value.length === 0)
      refuse(`--${option} needs a value: ${OPTIONS[option]}`);
    return value;
  };
  const required = (option: OptionName, why = ''): string =>
    text(option) ?? refuse(`${name} needs --${option} (${OPTIONS[option]})${why}`);
  const flag = (option: OptionName) => values.get(option) === true;

  switch (name) {
    case 'audit': {
      if (UUID.test(argument)) {
        refuse(
          `audit takes a module; the audit rows of operation ${argument} are: idem-admin history ${argument}`,
        );
      }
      const exportName = text('export');
      return { command: name, module: argument, ...(exportName ? { exportName } : {}) };
    }
    case 'show':
      return {
        command: name,
        operationId: operationIdOf(name, argument),
        showBodies: flag('show-bodies'),
      };
    case 'history':
      return { command: name, operationId: operationIdOf(name, argument) };
    case 'find':
      return {
        command: name,
        ...(await findKey(
          required('scope'),
          required('procedure'),
          text('key'),
          text('key-hash'),
          env,
        )),
        showBodies: flag('show-bodies'),
      };
    case 'stuck': {
      const grace = text('grace-ms');
      const limit = text('limit');
      return {
        command: name,
        graceMs: grace === undefined ? 300_000 : wholeNumber('grace-ms', grace, 0, MAX_WINDOW_MS),
        limit: limit === undefined ? 50 : wholeNumber('limit', limit, 1, MAX_LIMIT),
        showBodies: flag('show-bodies'),
      };
    }
    case 'reap': {
      const limit = text('limit');
      return {
        command: name,
        limit: limit === undefined ? 500 : wholeNumber('limit', limit, 1, MAX_LIMIT),
      };
    }
    case 'erase':
      return { command: name, scope: required('scope') };
    case 'resolve':
      return {
        command: name,
        operationId: operationIdOf(name, argument),
        resolution: await resolutionOf(text, required),
      };
  }
}

/** The key `find` looks up: by its hash, or by the key hashed with IDEM_KEY_SECRET. */
async function findKey(
  scope: string,
  procedure: string,
  key: string | undefined,
  keyHash: string | undefined,
  env: NodeJS.ProcessEnv,
): Promise<{
  scope: string;
  procedure: string;
  key?: { key: string; keySecret: string };
  keyHash?: string;
}> {
  if (key !== undefined && keyHash !== undefined)
    refuse('find takes --key or --key-hash, not both');
  if (keyHash !== undefined) {
    if (!/^[0-9a-f]{64}$/.test(keyHash)) {
      refuse(
        `--key-hash takes a key hash as the store keeps it, 64 lowercase hex characters (HMAC-SHA256), got ${JSON.stringify(keyHash)}`,
      );
    }
    return { scope, procedure, keyHash };
  }
  if (key === undefined) refuse('find: give --key or --key-hash');
  const { isIdempotencyKey, IDEMPOTENCY_KEY_MAX_LENGTH } = await import('@idem/contract');
  if (!isIdempotencyKey(key)) {
    refuse(
      `--key takes an Idempotency-Key as clients send it, 1 to ${IDEMPOTENCY_KEY_MAX_LENGTH} visible ASCII characters without spaces, got ${JSON.stringify(key)}`,
    );
  }
  const keySecret = env.IDEM_KEY_SECRET;
  if (!keySecret) {
    refuse(
      "find: a key is stored as an HMAC keyed with the app's keySecret: set IDEM_KEY_SECRET, or give --key-hash",
    );
  }
  const { MIN_KEY_SECRET_LENGTH } = await import('@idem/server');
  if (keySecret.length < MIN_KEY_SECRET_LENGTH) {
    refuse(
      `IDEM_KEY_SECRET is ${keySecret.length} characters; the app's keySecret has at least ${MIN_KEY_SECRET_LENGTH}: set it to the app's`,
    );
  }
  return { scope, procedure, key: { key, keySecret } };
}

/**
 * The resolution `--state` asks for, with the procedure's windows: required, never defaulted
 * (idem-admin cannot know a procedure's configuration, and a shorter window than the
 * procedure's lets a late retry run the work again). Checked as `adminCommands` checks it.
 */
async function resolutionOf(
  text: (option: OptionName) => string | undefined,
  required: (option: OptionName, why?: string) => string,
): Promise<AdminResolution> {
  const stateText = required('state');
  const state =
    STATES.find((s) => s === stateText) ??
    refuse(`--state takes ${OPTIONS.state}, got ${JSON.stringify(stateText)}`);
  const statusText = text('status');
  const status = statusText === undefined ? undefined : wholeNumber('status', statusText, 100, 599);
  const { checkResolution } = await import('@idem/server');
  const checked = checkResolution({ state, status, body: text('body') });
  if (!checked.ok) refuse(checked.message);
  const actor = required('actor', ': who resolves it, for the audit row');
  const note = required('note', ': why, for the audit row');

  const duration = (option: 'replay-window' | 'retention'): number | undefined => {
    const value = text(option);
    if (value === undefined) return undefined;
    const ms =
      parseDuration(value) ??
      refuse(
        `--${option} must be a duration such as 7d, 24h, 90m, 30s or 1500ms, got ${JSON.stringify(value)}`,
      );
    if (ms > MAX_WINDOW_MS)
      refuse(`--${option} must be at most 36500d (100 years), got ${JSON.stringify(value)}`);
    return ms;
  };
  const retention = () =>
    duration('retention') ??
    refuse(
      `--retention is required for ${state}: pass the procedure's retentionMs, e.g. --retention 72h (idem's default). ${
        state === 'RETRYABLE_FAILURE'
          ? 'The released record and its steps are kept that long for the next retry'
          : 'The record is deleted that long after the resolution'
      }`,
    );
  if (state === 'RETRYABLE_FAILURE') {
    if (text('replay-window') !== undefined) {
      refuse(
        "RETRYABLE_FAILURE stores no response: drop --replay-window (give --retention, the procedure's retentionMs)",
      );
    }
    return { state, retentionMs: retention(), actor, note };
  }
  const replayWindowMs =
    duration('replay-window') ??
    refuse(
      `--replay-window is required for ${state}: pass the procedure's replayWindowMs, e.g. --replay-window 24h (idem's default; 7d for a dead-letter queue's procedure). Retries get this response that long, and run the work again after it`,
    );
  const retentionMs = retention();
  if (retentionMs < replayWindowMs) {
    refuse(
      `--retention (${text('retention')}) must be at least --replay-window (${text('replay-window')}), as the server requires of a procedure's retentionMs and replayWindowMs`,
    );
  }
  // checkResolution gives COMPLETED and TERMINAL_FAILURE their response.
  return { state, response: checked.response!, replayWindowMs, retentionMs, actor, note };
}
