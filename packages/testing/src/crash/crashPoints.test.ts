import { describe, expect, it } from 'vitest';
import { crashPointName, crashPointsOf, describeCrashPoint } from './crashPoints.js';
import { downstreamRecorder } from './downstreamRecorder.js';

describe('crash points', () => {
  it('are three per external step, in the order a step passes them, then the outcome', () => {
    expect(crashPointsOf(['charge', 'email']).map(crashPointName)).toEqual([
      'before-intent "charge"',
      'after-intent "charge"',
      'after-call "charge"',
      'before-intent "email"',
      'after-intent "email"',
      'after-call "email"',
      'before-complete',
      'after-complete',
    ]);
  });

  it('read as a sentence in the messages', () => {
    expect(describeCrashPoint({ boundary: 'after-call', step: 'charge' })).toBe(
      'a crash after the call of step "charge", before its result was recorded',
    );
  });
});

describe('the downstream recorder outside the gate', () => {
  it('counts calls in memory, by operation id, before the call runs', async () => {
    const recorder = downstreamRecorder();
    const before = recorder.calls();
    const signal = new AbortController().signal;
    const failing = recorder.call('charge', async () => {
      throw new Error('connection reset');
    });
    await expect(failing('op-unit-1', { signal })).rejects.toThrow('connection reset');
    const charge = recorder.call('charge', async (operationId: string) => `ch_${operationId}`);
    expect(await charge('op-unit-1', { signal })).toBe('ch_op-unit-1');
    expect(recorder.calls('op-unit-1')).toBe(2);
    expect(recorder.calls()).toBe(before + 2);
    expect(downstreamRecorder()).toBe(recorder);
  });
});
