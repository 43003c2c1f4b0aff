import type { AdminResolution } from './adminCommands.js';
import {
  closestName,
  GLOBAL_OPTIONS,
  MAX_LIMIT,
  MAX_WINDOW_MS,
  OPTIONS,
  refuse,
  tokenize,
  wholeNumber,
  type OptionName,
} from './commandOptions.js';
import { parseDuration } from './parseDuration.js';

/*
 * idem-admin's command line, read and checked whole before anything is opened: every misuse
 * (an unknown command or option, a missing or malformed value, an option given twice) throws an
 * AdminInputError whose message is one line saying what is wrong and what is expected. No
 * database is reached until the line is known to be right. The contract and the server are
 * loaded only by the commands whose checks need them (find, resolve): a usage error answers at
 * once.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const EXAMPLE_ID = '47e280e2-ca40-4b44-8448-51622564c56e';
const STATES = ['COMPLETED', 'TERMINAL_FAILURE', 'RETRYABLE_FAILURE'] as const;

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
    const guess = closestName(command, commands);
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
  const { MIN_KEY_SECRET_LENGTH } = await import('@idem/server/operator');
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
  const { checkResolution } = await import('@idem/server/operator');
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
