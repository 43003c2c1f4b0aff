/**
 * How `idem-admin` ends when it cannot do what it is asked, run as operators run it (a child
 * process): a usage error is one line on stderr and exit 2, before any connection is opened; a
 * database it cannot reach is one line naming host and port and exit 3; any other failure is one
 * line and exit 1. No stack trace, no dependency path, no password, unless --verbose.
 */
import { execFile } from 'node:child_process';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createTestDatabase, postgresAvailable } from '@idem/fixtures';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const cli = fileURLToPath(new URL('../src/cli.ts', import.meta.url));
const fixtures = fileURLToPath(new URL('./fixtures/', import.meta.url));
const available = await postgresAvailable();

const PASSWORD = 'pw-never-printed-4f1c';
const KEY_SECRET = 'the-apps-key-secret-0123456789abcdef';
const ID = '47e280e2-ca40-4b44-8448-51622564c56e';
const STACK_FRAME = /^\s+at /m;
/** `text` as a regular expression matching it literally. */
const literally = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Runs the CLI with `env` over the test's, without the test's own database settings. */
async function idemAdmin(env: Record<string, string | undefined>, ...args: string[]) {
  const {
    DATABASE_URL: _url,
    IDEM_KEY_SECRET: _secret,
    PGCONNECT_TIMEOUT: _timeout,
    ...inherited
  } = process.env;
  const merged = { ...inherited, ...env };
  for (const [name, value] of Object.entries(merged)) if (value === undefined) delete merged[name];
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', cli, ...args], {
      env: merged,
      timeout: 60_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const { code, stdout, stderr } = error as { code: number; stdout: string; stderr: string };
    return { code, stdout, stderr };
  }
}

/** Listens on a free local port and calls `onSocket` with each connection, until disposed. */
async function listener(onSocket: (socket: Socket) => void) {
  const sockets = new Set<Socket>();
  let connections = 0;
  const server = createServer((socket) => {
    connections++;
    sockets.add(socket);
    onSocket(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    url: `postgres://idem:${PASSWORD}@127.0.0.1:${port}/idem`,
    get connections() {
      return connections;
    },
    async [Symbol.asyncDispose]() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A local port nothing listens on: bound to port 0, read, and closed again. */
async function freePort(): Promise<number> {
  await using free = await listener(() => {});
  return free.port;
}

/** Asserts the run printed nothing on stdout and exactly one line on stderr, matching `line`. */
function expectOneLine(result: { stdout: string; stderr: string }, line: RegExp) {
  expect(result.stdout).toBe('');
  expect(result.stderr).toMatch(/^idem-admin: [^\n]+\n$/);
  expect(result.stderr).toMatch(line);
  expect(result.stderr).not.toMatch(STACK_FRAME);
  expect(result.stderr).not.toContain('node_modules');
  expect(result.stderr).not.toContain(PASSWORD);
}

const resolveLine = (state: string, ...rest: string[]) => [
  'resolve',
  ID,
  '--state',
  state,
  '--actor',
  'ops',
  '--note',
  'n',
  ...rest,
];
const completed = (...rest: string[]) => resolveLine('COMPLETED', '--body', '{"ok":1}', ...rest);
const windows = ['--replay-window', '24h', '--retention', '72h'];

describe.concurrent('idem-admin misuse: one line on stderr, exit 2, no connection opened', () => {
  it.each<[string, string[], RegExp, Record<string, string | undefined>?]>([
    // commands and arguments
    ['no command', [], /give a command: audit, show, find, stuck, resolve, history, reap, erase/],
    ['an unknown command', ['frob'], /unknown command "frob"; the commands: audit, show/],
    ['a mistyped command', ['shwo', ID], /unknown command "shwo" \(did you mean show\?\)/],
    ['a stray argument', ['reap', '500'], /reap takes no arguments, got "500"/],
    ['show without an id', ['show'], /show takes an operation id: idem-admin show <operationId>/],
    ['show with two ids', ['show', ID, ID], /show takes one argument, an operation id, got 2/],
    [
      'a malformed id (show)',
      ['show', 'abc'],
      /show takes an operation id, a uuid such as 47e2.*, got "abc"/,
    ],
    ['a malformed id (history)', ['history', `${ID}x`], /history takes an operation id, a uuid/],
    [
      'a malformed id (resolve)',
      ['resolve', '42', ...windows],
      /resolve takes an operation id, a uuid/,
    ],
    ['audit without a module', ['audit'], /audit takes the module that exports your router/],
    [
      'audit given an id',
      ['audit', ID],
      new RegExp(`the audit rows of operation ${ID} are: idem-admin history ${ID}`),
    ],
    [
      'audit of a missing module',
      ['audit', 'no/such/router.ts'],
      /no module at .*no\/such\/router\.ts/,
    ],
    [
      'audit with an empty --export',
      ['audit', `${fixtures}decidedRouter.ts`, '--export='],
      /--export needs a value: an export name/,
    ],
    // options
    [
      'an unknown option',
      ['reap', '--limt', '5'],
      /unknown option --limt \(did you mean --limit\?\)/,
    ],
    [
      'a short option',
      ['reap', '-l', '5'],
      /unknown option "-l": options are long, such as --limit 50/,
    ],
    [
      "another command's option",
      ['reap', '--scope', 's'],
      /reap takes no --scope; its options: --limit/,
    ],
    [
      'an option on a command without any',
      ['history', ID, '--show-bodies'],
      /history takes no --show-bodies; it takes no options/,
    ],
    [
      'an option given twice',
      ['reap', '--limit', '5', '--limit', '6'],
      /--limit is given twice \("5" and "6"\): give it once/,
    ],
    [
      'a flag given twice',
      ['show', ID, '--show-bodies', '--show-bodies'],
      /--show-bodies is given twice: give it once/,
    ],
    ['a flag with a value', ['show', ID, '--show-bodies=yes'], /--show-bodies takes no value/],
    [
      'a value missing at the end',
      ['reap', '--limit'],
      /--limit needs a value after it: a whole number from 1 to 10000/,
    ],
    [
      'a value missing before the next option',
      ['stuck', '--grace-ms', '--limit', '5'],
      /--grace-ms needs a value before --limit/,
    ],
    ['an empty value', ['erase', '--scope='], /--scope needs a value: a scope/],
    // whole numbers
    ...['0', 'abc', '1.5', '1e3', '-1', '10001', '99999999999999999999'].map(
      (limit): [string, string[], RegExp] => [
        `reap --limit ${limit}`,
        ['reap', '--limit', limit],
        new RegExp(literally(`--limit takes a whole number from 1 to 10000, got "${limit}"`)),
      ],
    ),
    [
      'stuck --limit 0',
      ['stuck', '--limit', '0'],
      /--limit takes a whole number from 1 to 10000, got "0"/,
    ],
    ...['abc', '-1', '1.5', '3153600000001', '9007199254740993'].map(
      (grace): [string, string[], RegExp] => [
        `stuck --grace-ms ${grace}`,
        ['stuck', '--grace-ms', grace],
        new RegExp(
          literally(
            `--grace-ms takes a whole number of milliseconds from 0 to 3153600000000 (100 years), got "${grace}"`,
          ),
        ),
      ],
    ),
    // find
    [
      'find without --scope',
      ['find', '--procedure', 'p', '--key-hash', 'a'.repeat(64)],
      /find needs --scope/,
    ],
    [
      'find without --procedure',
      ['find', '--scope', 's', '--key-hash', 'a'.repeat(64)],
      /find needs --procedure/,
    ],
    [
      'find without a key',
      ['find', '--scope', 's', '--procedure', 'p'],
      /give --key or --key-hash/,
    ],
    [
      'find with both keys',
      ['find', '--scope', 's', '--procedure', 'p', '--key', 'k', '--key-hash', 'a'.repeat(64)],
      /find takes --key or --key-hash, not both/,
    ],
    [
      'a malformed --key-hash',
      ['find', '--scope', 's', '--procedure', 'p', '--key-hash', 'ABC'],
      /--key-hash takes a key hash as the store keeps it, 64 lowercase hex characters/,
    ],
    [
      'a --key with a space',
      ['find', '--scope', 's', '--procedure', 'p', '--key', 'pay 42'],
      /--key takes an Idempotency-Key as clients send it, 1 to 255 visible ASCII/,
    ],
    [
      'a --key too long',
      ['find', '--scope', 's', '--procedure', 'p', '--key', 'k'.repeat(256)],
      /--key takes an Idempotency-Key/,
    ],
    [
      '--key without IDEM_KEY_SECRET',
      ['find', '--scope', 's', '--procedure', 'p', '--key', 'pay-42'],
      /set IDEM_KEY_SECRET, or give --key-hash/,
    ],
    [
      '--key with a short IDEM_KEY_SECRET',
      ['find', '--scope', 's', '--procedure', 'p', '--key', 'pay-42'],
      /IDEM_KEY_SECRET is 5 characters; the app's keySecret has at least 32/,
      { IDEM_KEY_SECRET: 'short' },
    ],
    ['erase without --scope', ['erase'], /erase needs --scope \(a scope\)/],
    // resolve
    [
      'resolve without --state',
      ['resolve', ID, '--actor', 'a', '--note', 'n'],
      /resolve needs --state \(COMPLETED, TERMINAL_FAILURE or RETRYABLE_FAILURE\)/,
    ],
    [
      'an unknown --state',
      resolveLine('DONE'),
      /--state takes COMPLETED, TERMINAL_FAILURE or RETRYABLE_FAILURE, got "DONE"/,
    ],
    [
      'resolve without --actor',
      ['resolve', ID, '--state', 'RETRYABLE_FAILURE', '--note', 'n', '--retention', '72h'],
      /resolve needs --actor \(a name\): who resolves it/,
    ],
    [
      'resolve without --note',
      ['resolve', ID, '--state', 'RETRYABLE_FAILURE', '--actor', 'a', '--retention', '72h'],
      /resolve needs --note \(a note\): why/,
    ],
    [
      'a --status that is no number',
      completed('--status', 'ok', ...windows),
      /--status takes an HTTP status from 100 to 599, got "ok"/,
    ],
    [
      'a --status out of range',
      completed('--status', '99', ...windows),
      /--status takes an HTTP status from 100 to 599, got "99"/,
    ],
    [
      'a fractional --status',
      completed('--status', '200.5', ...windows),
      /--status takes an HTTP status from 100 to 599, got "200.5"/,
    ],
    [
      'COMPLETED without --body',
      resolveLine('COMPLETED', ...windows),
      /--body is required for COMPLETED/,
    ],
    [
      'COMPLETED with a body that is no JSON',
      resolveLine('COMPLETED', '--body', '{ok', ...windows),
      /--body for COMPLETED must be the procedure's output/,
    ],
    [
      'a free-form failure body over two lines',
      resolveLine('TERMINAL_FAILURE', '--body', '{\n"error":"declined"}', ...windows),
      /--body for TERMINAL_FAILURE must be \{"code":"<tRPC error code>"/,
    ],
    [
      'RETRYABLE_FAILURE with a --body',
      resolveLine('RETRYABLE_FAILURE', '--body', '{}', '--retention', '72h'),
      /RETRYABLE_FAILURE releases the key .*: it takes no --status or --body/,
    ],
    [
      'RETRYABLE_FAILURE with --replay-window',
      resolveLine('RETRYABLE_FAILURE', ...windows),
      /RETRYABLE_FAILURE stores no response: drop --replay-window/,
    ],
    [
      'COMPLETED without --replay-window',
      completed('--retention', '72h'),
      /--replay-window is required for COMPLETED/,
    ],
    [
      'COMPLETED without --retention',
      completed('--replay-window', '24h'),
      /--retention is required for COMPLETED/,
    ],
    ...['7 days', '24', '0h', '-1h', '1.5h', '2w'].map((window): [string, string[], RegExp] => [
      `--replay-window ${window}`,
      completed('--replay-window', window, '--retention', '72h'),
      /--replay-window must be a duration such as 7d, 24h, 90m, 30s or 1500ms, got "/,
    ]),
    [
      'a --retention that is no duration',
      completed('--replay-window', '24h', '--retention', 'forever'),
      /--retention must be a duration such as 7d/,
    ],
    [
      'a --retention past 100 years',
      completed('--replay-window', '24h', '--retention', '36501d'),
      /--retention must be at most 36500d \(100 years\), got "36501d"/,
    ],
    [
      'a --replay-window past what dates hold',
      completed('--replay-window', '100000000d', '--retention', '100000000d'),
      /--replay-window must be at most 36500d/,
    ],
    [
      'a retention shorter than the replay window',
      completed('--replay-window', '7d', '--retention', '72h'),
      /--retention \(72h\) must be at least --replay-window \(7d\)/,
    ],
    // the environment
    [
      'DATABASE_URL not set',
      ['reap'],
      /DATABASE_URL is not set: the record commands need the database/,
      { DATABASE_URL: undefined },
    ],
    ['DATABASE_URL empty', ['stuck'], /DATABASE_URL is not set/, { DATABASE_URL: '' }],
    [
      'DATABASE_URL of another scheme',
      ['reap'],
      /DATABASE_URL must be a postgres:\/\/ URL .*, got a mysql:\/\/ URL/,
      { DATABASE_URL: `mysql://root:${PASSWORD}@127.0.0.1/db` },
    ],
    [
      'DATABASE_URL that is no URL',
      ['reap'],
      /DATABASE_URL must be a postgres:\/\/ URL .*, got no URL/,
      { DATABASE_URL: PASSWORD },
    ],
    [
      'DATABASE_URL a client cannot read',
      ['reap'],
      /DATABASE_URL is not a URL PostgreSQL clients read/,
      { DATABASE_URL: `postgres://idem:${PASSWORD}@[127.0.0.1/db` },
    ],
  ])('%s', async (_name, args, line, env = {}) => {
    // A database that counts and drops connections: the CLI must refuse before opening one.
    await using sentinel = await listener((socket) => socket.destroy());
    const result = await idemAdmin(
      { DATABASE_URL: sentinel.url, IDEM_KEY_SECRET: undefined, ...env },
      ...args,
    );
    expect(result.code).toBe(2);
    expectOneLine(result, line);
    expect(result.stderr).toMatch(/\(see idem-admin --help\)\n$/);
    expect(sentinel.connections).toBe(0);
  });

  it('--verbose changes nothing for a usage error: one line, before any connection', async () => {
    await using sentinel = await listener((socket) => socket.destroy());
    const result = await idemAdmin(
      { DATABASE_URL: sentinel.url },
      '--verbose',
      'reap',
      '--limit',
      '0',
    );
    expect(result.code).toBe(2);
    expectOneLine(result, /--limit takes a whole number from 1 to 10000, got "0"/);
    expect(sentinel.connections).toBe(0);
  });
});

it('--help documents the exit codes and --verbose', async () => {
  const { code, stdout } = await idemAdmin({}, '--help');
  expect(code).toBe(0);
  expect(stdout).toMatch(/--verbose {2,}print the stack trace of a failure/);
  for (const exit of [
    '0  done',
    '1  audit found',
    '2  a usage error',
    '3  the database cannot be reached',
  ]) {
    expect(stdout).toContain(`\n  ${exit}`);
  }
});

describe.concurrent('idem-admin and a database it cannot reach: one line, exit 3', () => {
  it('connection refused on a free local port names 127.0.0.1 and the port, never the password', async () => {
    const port = await freePort();
    const url = `postgres://idem:${PASSWORD}@127.0.0.1:${port}/idem`;
    const result = await idemAdmin({ DATABASE_URL: url }, 'stuck');
    expect(result.code).toBe(3);
    expectOneLine(
      result,
      new RegExp(
        `cannot reach the database at 127\\.0\\.0\\.1:${port} \\(DATABASE_URL\\): connection refused`,
      ),
    );
  });

  it('a host name that does not resolve names the host', async () => {
    const url = `postgres://idem:${PASSWORD}@idem-admin-test.invalid:5432/idem`;
    const result = await idemAdmin({ DATABASE_URL: url }, 'reap');
    expect(result.code).toBe(3);
    expectOneLine(
      result,
      /cannot reach the database at idem-admin-test\.invalid:5432 \(DATABASE_URL\): /,
    );
  });

  it.each([
    ['the URL', '?connect_timeout=1', {}, 1],
    ['PGCONNECT_TIMEOUT', '', { PGCONNECT_TIMEOUT: '1' }, 1],
    ['nothing: the default', '', {}, 5],
  ])(
    'a server that never answers is given up after the connect timeout of %s',
    async (_name, query, env, seconds) => {
      // Accepts the connection and says nothing: without a bound the CLI would wait forever.
      await using silent = await listener(() => {});
      const result = await idemAdmin({ DATABASE_URL: `${silent.url}${query}`, ...env }, 'reap');
      expect(result.code).toBe(3);
      expectOneLine(
        result,
        new RegExp(
          `the database at 127\\.0\\.0\\.1:${silent.port} \\(DATABASE_URL\\): no answer within ${seconds} s`,
        ),
      );
      expect(silent.connections).toBe(1);
    },
  );

  it('--verbose, anywhere on the line, adds the stack', async () => {
    const port = await freePort();
    const url = `postgres://idem:${PASSWORD}@127.0.0.1:${port}/idem`;
    for (const args of [
      ['--verbose', 'reap'],
      ['reap', '--verbose'],
    ]) {
      const result = await idemAdmin({ DATABASE_URL: url }, ...args);
      expect(result.code).toBe(3);
      expect(result.stderr.split('\n')[0]).toMatch(
        new RegExp(`127\\.0\\.0\\.1:${port}.*connection refused`),
      );
      expect(result.stderr).toMatch(STACK_FRAME);
      expect(result.stderr).not.toContain(PASSWORD);
    }
  });
});

describe
  .skipIf(!available)
  .concurrent('idem-admin and a database that refuses the login: exit 3', () => {
    const admin = new URL(
      process.env.IDEM_TEST_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
    );
    const where = `${admin.hostname}:${admin.port || 5432}`;
    const as = (user: string, database: string) => {
      const url = new URL(admin);
      url.username = user;
      url.password = PASSWORD;
      url.pathname = `/${database}`;
      return url.href;
    };

    it.each([
      [
        'an unknown role',
        as('idem_admin_no_such_role', 'postgres'),
        /role "idem_admin_no_such_role" does not exist \(SQLSTATE 28000\)/,
      ],
      [
        'an unknown database',
        as(admin.username || 'postgres', 'idem_admin_no_such_database'),
        /database "idem_admin_no_such_database" does not exist \(SQLSTATE 3D000\)/,
      ],
    ])('%s names host and port', async (_name, url, reason) => {
      const result = await idemAdmin({ DATABASE_URL: url }, 'stuck');
      expect(result.code).toBe(3);
      expectOneLine(
        result,
        new RegExp(
          `the database at ${where.replaceAll('.', '\\.')} \\(DATABASE_URL\\) refused the connection: `,
        ),
      );
      expect(result.stderr).toMatch(reason);
    });
  });

describe.concurrent(
  'idem-admin on an unexpected failure: one line, exit 1; the stack with --verbose',
  () => {
    it.skipIf(!available)("a database without idem's schema", async () => {
      await using database = await createTestDatabase('idem_admin_bare');
      const quiet = await idemAdmin({ DATABASE_URL: database.url }, 'reap');
      expect(quiet.code).toBe(1);
      expectOneLine(
        quiet,
        /reap failed: PostgresError 42P01: relation "idem_records" does not exist \(is idem's schema migrated.*\(--verbose shows the stack\)$/m,
      );
      const verbose = await idemAdmin({ DATABASE_URL: database.url }, 'reap', '--verbose');
      expect(verbose.code).toBe(1);
      expect(verbose.stderr.split('\n')[0]).toMatch(
        /^idem-admin: reap failed: PostgresError 42P01: /,
      );
      expect(verbose.stderr).toMatch(STACK_FRAME);
    });

    it('a router module that fails to load', async () => {
      const module = `${fixtures}failingModule.ts`;
      const quiet = await idemAdmin({}, 'audit', module);
      expect(quiet.code).toBe(1);
      expectOneLine(
        quiet,
        /audit of .*failingModule\.ts failed: Error: ROUTER_CONFIG is not set \(--verbose shows the stack\)$/m,
      );
      const verbose = await idemAdmin({}, '--verbose', 'audit', module);
      expect(verbose.code).toBe(1);
      expect(verbose.stderr).toMatch(STACK_FRAME);
    });
  },
);
