/**
 * The crash points gate on a small external-mode router, on PGlite and on PostgreSQL: the
 * correct router passes every crash point, recovered by a retry and by the completer; the
 * planted mistakes (a step without a lookup, a lookup that never finds the call) fail with the
 * gate's message.
 */
import { createTestDatabase, postgresAvailable } from '@idem/fixtures';
import { describe, expect, it } from 'vitest';
import { crashPointsGate, isCrashPointsGateError } from '../src/index.js';
import type { CrashPointsGateOptions } from '../src/index.js';
import { chargeCount } from './crash/crashPaymentsApp.js';

const available = await postgresAvailable();

const gate = (place: { databaseUrl?: string }, exportName: string) =>
  ({
    app: new URL('./crash/crashPaymentsApp.ts', import.meta.url),
    exportName,
    path: 'payments.create',
    caller: 'acct_crash',
    input: ({ seed }) => ({ amount: 100 + (seed % 900) }),
    effect: chargeCount,
    ...(place.databaseUrl ? { databaseUrl: place.databaseUrl, freshDatabase: false } : {}),
  }) satisfies CrashPointsGateOptions;

/** Runs the gate and returns the error it threw. */
async function failure(options: CrashPointsGateOptions) {
  const error: unknown = await crashPointsGate(options).then(
    () => null,
    (e: unknown) => e,
  );
  if (!isCrashPointsGateError(error)) throw new Error('the gate passed', { cause: error });
  return error;
}

describe.each([
  ['PGlite', async () => ({ options: {}, [Symbol.asyncDispose]: async () => {} })],
  [
    'PostgreSQL',
    async () => {
      const database = await createTestDatabase('idem_testing_crash');
      return {
        options: { databaseUrl: database.url },
        [Symbol.asyncDispose]: () => database.drop(),
      };
    },
  ],
] as const)('crash points on %s', (name, where) => {
  const skip = name === 'PostgreSQL' && !available;

  it.skipIf(skip)(
    'the correct router passes every point: one call per operation, found by lookup after it',
    async () => {
      await using place = await where();
      const report = await crashPointsGate(gate(place.options, 'correctApp'));
      expect(report.steps).toEqual(['charge']);
      expect(report.effect).toEqual({ moved: 11, operations: 11 });
      const lookups = { 'after-intent "charge"': 1, 'after-call "charge"': 1 };
      expect(report.runs.map((r) => [r.point, r.recovery, r.calls, r.lookups])).toEqual(
        [
          'before-intent "charge"',
          'after-intent "charge"',
          'after-call "charge"',
          'before-complete',
          'after-complete',
        ].flatMap((point) =>
          (['retry', 'completer'] as const).map((recovery) => [
            point,
            recovery,
            1,
            lookups[point as keyof typeof lookups] ?? 0,
          ]),
        ),
      );
    },
    240_000,
  );

  it.skipIf(skip)(
    'two external steps: each gets its own crash points',
    async () => {
      await using place = await where();
      const report = await crashPointsGate({
        ...gate(place.options, 'twoStepsApp'),
        boundaries: ['after-call'],
        completer: false,
      });
      expect(report.steps).toEqual(['charge', 'receipt']);
      expect(report.runs.map((r) => [r.point, r.calls, r.lookups])).toEqual([
        ['after-call "charge"', 2, 1],
        ['after-call "receipt"', 2, 1],
      ]);
      expect(report.effect).toEqual({ moved: 3, operations: 3 });
    },
    120_000,
  );

  it.skipIf(skip)(
    'a step without a lookup: the retry after a crash past the intent is handed to an operator',
    async () => {
      await using place = await where();
      const error = await failure({
        ...gate(place.options, 'withoutLookupApp'),
        boundaries: ['after-intent', 'after-call'],
        completer: false,
      });
      expect(error.problems.map((p) => [p.point, p.recovery])).toEqual([
        ['after-intent "charge"', 'retry'],
        ['after-call "charge"', 'retry'],
        ['every point', null],
      ]);
      expect(error.message).toContain(
        `1. after-intent "charge", recovered by a retry: expected the retry to answer 200 with the result of operation`,
      );
      expect(error.message).toContain(
        'it answered 409 IDEMPOTENCY_OUTCOME_UNKNOWN. Likely cause: does step "charge" have a lookup?',
      );
      expect(error.problems[2]).toMatchObject({
        expected: 'the effect to move by exactly one per operation: 3',
        happened: 'it moved by 2',
      });
    },
    120_000,
  );

  it.skipIf(skip)(
    'a lookup that never finds the call: the downstream is called twice after a crash after the call',
    async () => {
      await using place = await where();
      const error = await failure({
        ...gate(place.options, 'lookupNeverFindsApp'),
        boundaries: ['after-call'],
        completer: false,
      });
      expect(error.problems).toHaveLength(2);
      expect(error.problems[0]).toMatchObject({
        point: 'after-call "charge"',
        recovery: 'retry',
        expected: expect.stringMatching(
          /^the downstream "charge" to be called at most once for operation [0-9a-f-]{36}$/,
        ),
        happened:
          'it was called twice after a crash after the call of step "charge", before its result was recorded',
        cause: expect.stringContaining(
          'does step "charge" have a lookup that finds the call? Its lookup answered not found although the call had been made',
        ),
      });
      expect(error.problems[1]).toMatchObject({ point: 'every point', happened: 'it moved by 3' });
    },
    120_000,
  );
});

describe('crash points: misuse fails at start-up', () => {
  it('a factory without a completer is refused, naming the fix', async () => {
    await expect(crashPointsGate(gate({}, 'noCompleterApp'))).rejects.toThrow(
      /your factory returns no `completer`: return `completer: \(\) => idem\.completer\(\{ router, createContext: \(record\) => \.\.\. \}\)`.*or run the gate with `completer: false`/,
    );
  }, 120_000);

  it('a path the gate cannot run on is refused: unknown, or a local-mode procedure', async () => {
    await expect(
      crashPointsGate({ ...gate({}, 'correctApp'), path: 'payments.missing' }),
    ).rejects.toThrow('your router has no procedure payments.missing');
    await expect(crashPointsGate({ ...gate({}, 'correctApp'), path: 'notes.add' })).rejects.toThrow(
      /notes\.add is in local mode, where a crash rolls the whole attempt back: the gate is for external mode/,
    );
  }, 120_000);

  it('a module without the named app is refused', async () => {
    await expect(crashPointsGate(gate({}, 'missingApp'))).rejects.toThrow(
      /the export "missingApp" of .*crashPaymentsApp\.ts is not an app made with defineIdemTestApp/,
    );
  });
});
