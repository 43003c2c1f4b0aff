import { AdminInputError } from './AdminInputError.js';

/*
 * Reading idem-admin's command line: the options there are, what each takes, and the line split
 * into options and arguments. An unknown option, one given twice or without its value is refused
 * here, whatever the command.
 */

/** The largest `--limit`: one statement's batch, well inside what the store takes (2^31 - 1). */
export const MAX_LIMIT = 10_000;
/**
 * The longest `--grace-ms`, `--replay-window` and `--retention`: 100 years. The database's clock
 * minus some 6,700 years leaves PostgreSQL's timestamps (4713 BC), and a record kept some 274,000
 * years is dated past what a JavaScript Date reads.
 */
export const MAX_WINDOW_MS = 36_500 * 86_400_000;

/** Every option, with what its value is (`undefined`: a flag, which takes none). */
export const OPTIONS = {
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
export type OptionName = keyof typeof OPTIONS;
export const GLOBAL_OPTIONS: readonly OptionName[] = ['verbose', 'help'];

/** The command line split: its options by name (a flag as true) and its arguments. */
export interface Tokens {
  values: Map<OptionName, string | true>;
  positionals: string[];
}

export function refuse(message: string): never {
  throw new AdminInputError(message);
}

/** Whether `--verbose` is on the line (before a `--`), however the rest of it reads. */
export function wantsVerbose(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  return (end === -1 ? argv : argv.slice(0, end)).includes('--verbose');
}

const isOption = (name: string): name is OptionName => Object.hasOwn(OPTIONS, name);

/** Splits the line into options and arguments; refuses unknown, repeated and valueless options. */
export function tokenize(argv: readonly string[]): Tokens {
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
      const guess = closestName(name, Object.keys(OPTIONS));
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
export function wholeNumber(option: OptionName, text: string, min: number, max: number): number {
  const value = /^[0-9]+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    refuse(`--${option} takes ${OPTIONS[option]}, got ${JSON.stringify(text)}`);
  }
  return value;
}

/** The closest of `names` to `name` (at most two edits away), for a "did you mean". */
export function closestName(name: string, names: readonly string[]): string | undefined {
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
