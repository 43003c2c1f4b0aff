import { describe, expect, it } from 'vitest';
import { isAdminInputError } from './AdminInputError.js';
import { parseCommandLine } from './commandLine.js';
import { MAX_LIMIT, MAX_WINDOW_MS, wantsVerbose } from './commandOptions.js';

const ID = '47e280e2-ca40-4b44-8448-51622564c56e';
const HASH = 'ab'.repeat(32);
const SECRET = 'the-apps-key-secret-0123456789abcdef';
const DAY = 86_400_000;

describe('parseCommandLine', () => {
  it.each<[string, string[], object]>([
    ['help', ['--help'], { command: 'help' }],
    ['help wins over the rest', ['reap', '-h'], { command: 'help' }],
    ['stuck: its defaults', ['stuck'], { command: 'stuck', graceMs: 300_000, limit: 50 }],
    ['reap: its default', ['reap'], { command: 'reap', limit: 500 }],
    ['an option written with =', ['reap', '--limit=7'], { command: 'reap', limit: 7 }],
    ['options before the command', ['--limit', '7', 'reap'], { command: 'reap', limit: 7 }],
    ['--verbose before the command', ['--verbose', 'reap'], { command: 'reap' }],
    ['--verbose after it', ['reap', '--limit', '7', '--verbose'], { command: 'reap', limit: 7 }],
    [
      'the bounds',
      ['stuck', '--grace-ms', String(MAX_WINDOW_MS), '--limit', String(MAX_LIMIT)],
      {
        graceMs: MAX_WINDOW_MS,
        limit: MAX_LIMIT,
      },
    ],
    ['a grace of 0', ['stuck', '--grace-ms', '0'], { graceMs: 0 }],
    ['show', ['show', ID, '--show-bodies'], { command: 'show', operationId: ID, showBodies: true }],
    ['an argument after --', ['history', '--', ID], { command: 'history', operationId: ID }],
    [
      'find by hash',
      ['find', '--scope', 's', '--procedure', 'p', '--key-hash', HASH],
      {
        command: 'find',
        keyHash: HASH,
        showBodies: false,
      },
    ],
    [
      'find by key',
      ['find', '--scope', 's', '--procedure', 'p', '--key', 'pay-42'],
      {
        key: { key: 'pay-42', keySecret: SECRET },
      },
    ],
    ['a value starting with a dash', ['erase', '--scope', '-acct'], { scope: '-acct' }],
    ['a value starting with -- written with =', ['erase', '--scope=--acct'], { scope: '--acct' }],
    [
      'resolve COMPLETED',
      [
        'resolve',
        ID,
        '--state',
        'COMPLETED',
        '--body',
        '{"a":1}',
        '--actor',
        'ops',
        '--note',
        'n',
        '--replay-window',
        '7d',
        '--retention',
        '36500d',
      ],
      {
        resolution: {
          state: 'COMPLETED',
          response: { status: 200, body: '{"a":1}' },
          replayWindowMs: 7 * DAY,
          retentionMs: MAX_WINDOW_MS,
          actor: 'ops',
          note: 'n',
        },
      },
    ],
    [
      'resolve RETRYABLE_FAILURE',
      [
        'resolve',
        ID,
        '--state',
        'RETRYABLE_FAILURE',
        '--actor',
        'ops',
        '--note',
        'n',
        '--retention',
        '72h',
      ],
      { resolution: { state: 'RETRYABLE_FAILURE', retentionMs: 3 * DAY, actor: 'ops', note: 'n' } },
    ],
  ])('%s', async (_name, argv, expected) => {
    expect(await parseCommandLine(argv, { IDEM_KEY_SECRET: SECRET })).toMatchObject(expected);
  });

  it('refuses with an AdminInputError whose message is one line', async () => {
    const refusal = await parseCommandLine(['reap', '--limit', '0'], {}).catch((e: unknown) => e);
    expect(isAdminInputError(refusal)).toBe(true);
    expect((refusal as Error).message).toBe(
      '--limit takes a whole number from 1 to 10000, got "0"',
    );
  });
});

describe('wantsVerbose', () => {
  it.each([
    [['--verbose', 'reap'], true],
    [['reap', '--verbose'], true],
    [['reap'], false],
    [['erase', '--', '--verbose'], false],
  ])('%j: %s', (argv, verbose) => {
    expect(wantsVerbose(argv)).toBe(verbose);
  });
});
