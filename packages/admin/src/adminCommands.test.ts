import type { RecoveryStore } from '@idem/contract';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { AdminInputError, isAdminInputError } from './AdminInputError.js';
import { adminCommands, type AdminResolution } from './adminCommands.js';

const DAY = 86_400_000;

/** A store no refused call may reach: whatever it is asked, it fails the test. */
const untouched = new Proxy(
  {},
  {
    get: (_store, name) => () => {
      throw new Error(`store.${String(name)} was called`);
    },
  },
) as RecoveryStore<unknown>;
const admin = adminCommands(untouched);
const operationId = '47e280e2-ca40-4b44-8448-51622564c56e';
const audit = { actor: 'ops', note: 'confirmed with the processor' };
const completed = {
  state: 'COMPLETED',
  response: { body: '{"chargeId":"ch_9"}' },
  ...audit,
} as const;

describe('adminCommands(store).resolve', () => {
  it("takes the procedure's windows: forgetting one does not compile", () => {
    expectTypeOf<Exclude<AdminResolution, { state: 'RETRYABLE_FAILURE' }>>().toMatchTypeOf<{
      replayWindowMs: number;
      retentionMs: number;
    }>();
    expectTypeOf<Extract<AdminResolution, { state: 'RETRYABLE_FAILURE' }>>().toMatchTypeOf<{
      retentionMs: number;
    }>();
    const typeOnly = (call: () => unknown) => call; // never run: the compiler is the test
    typeOnly(() =>
      // @ts-expect-error COMPLETED without replayWindowMs
      admin.resolve(operationId, { ...completed, retentionMs: 3 * DAY }),
    );
    typeOnly(() =>
      // @ts-expect-error TERMINAL_FAILURE without retentionMs
      admin.resolve(operationId, {
        state: 'TERMINAL_FAILURE',
        response: { body: '{"code":"NOT_FOUND","message":"no such charge"}' },
        replayWindowMs: DAY,
        ...audit,
      }),
    );
    // @ts-expect-error RETRYABLE_FAILURE without retentionMs
    typeOnly(() => admin.resolve(operationId, { state: 'RETRYABLE_FAILURE', ...audit }));
    typeOnly(() =>
      // @ts-expect-error RETRYABLE_FAILURE with a replay window: a released key replays nothing
      admin.resolve(operationId, {
        state: 'RETRYABLE_FAILURE',
        retentionMs: 3 * DAY,
        replayWindowMs: DAY,
        ...audit,
      }),
    );
    // And what compiles: each state with its windows.
    typeOnly(() =>
      admin.resolve(operationId, { ...completed, replayWindowMs: 7 * DAY, retentionMs: 14 * DAY }),
    );
    typeOnly(() =>
      admin.resolve(operationId, { state: 'RETRYABLE_FAILURE', retentionMs: DAY, ...audit }),
    );
  });

  it.each<[string, Record<string, unknown>, RegExp]>([
    ['COMPLETED without windows', completed, /COMPLETED needs the procedure's replayWindowMs/],
    [
      'COMPLETED without retentionMs',
      { ...completed, replayWindowMs: DAY },
      /COMPLETED needs the procedure's retentionMs/,
    ],
    [
      'a retention shorter than the replay window',
      { ...completed, replayWindowMs: 7 * DAY, retentionMs: 3 * DAY },
      /retentionMs \(259200000\) must be at least replayWindowMs \(604800000\)/,
    ],
    [
      'a window of 0',
      { ...completed, replayWindowMs: 0, retentionMs: DAY },
      /replayWindowMs must be a positive whole number of milliseconds/,
    ],
    [
      'a window that is no whole number',
      { ...completed, replayWindowMs: DAY, retentionMs: '72h' },
      /retentionMs must be a positive whole number of milliseconds/,
    ],
    [
      'RETRYABLE_FAILURE without retentionMs',
      { state: 'RETRYABLE_FAILURE', ...audit },
      /RETRYABLE_FAILURE needs the procedure's retentionMs/,
    ],
    [
      'RETRYABLE_FAILURE with a replay window',
      { state: 'RETRYABLE_FAILURE', replayWindowMs: DAY, retentionMs: DAY, ...audit },
      /RETRYABLE_FAILURE stores no response/,
    ],
  ])('refuses %s before reading the record (an untyped caller)', async (_name, given, message) => {
    const refused = admin.resolve(operationId, given as unknown as AdminResolution);
    await expect(refused).rejects.toBeInstanceOf(AdminInputError);
    await expect(refused).rejects.toThrow(message);
  });

  it('refuses a key without the secret as input, not as a crash', async () => {
    const found = admin.find({ scope: 's', procedure: 'p', key: 'pay-42' });
    await expect(found).rejects.toThrow(/set IDEM_KEY_SECRET, or give --key-hash/);
    expect(isAdminInputError(await found.catch((error: unknown) => error))).toBe(true);
    // Still a TypeError, as before, for callers that check that.
    await expect(found).rejects.toBeInstanceOf(TypeError);
  });
});
