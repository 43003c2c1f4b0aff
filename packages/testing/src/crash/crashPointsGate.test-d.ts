import type { LookupResult } from '@idem/server';
import { expectTypeOf, test } from 'vitest';
import { crashPointsGate, type CrashPointsGateOptions } from './crashPointsGate.js';
import { downstreamRecorder, type StepFunction } from './downstreamRecorder.js';

const app = new URL('file:///app.ts');
const effect = async () => 0;

test('the gate needs a caller and an effect, and takes only known boundaries', () => {
  void crashPointsGate({ app, path: 'payments.create', caller: 'a', input: () => ({}), effect });
  // @ts-expect-error: no effect to watch
  void crashPointsGate({ app, path: 'payments.create', caller: 'a', input: () => ({}) });
  // @ts-expect-error: no caller
  void crashPointsGate({ app, path: 'payments.create', input: () => ({}), effect });
  const options = { app, path: 'p', caller: 'a', input: () => ({}), effect };
  // @ts-expect-error: not a crash boundary
  void crashPointsGate({ ...options, boundaries: ['after-everything'] });
  expectTypeOf<CrashPointsGateOptions['boundaries']>().toEqualTypeOf<
    | readonly (
        'before-intent' | 'after-intent' | 'after-call' | 'before-complete' | 'after-complete'
      )[]
    | undefined
  >();
});

test('the recorder hands back the step functions it wraps, types unchanged', () => {
  const recorder = downstreamRecorder();
  const call = recorder.call('charge', async (operationId) => ({ id: operationId }));
  expectTypeOf(call).toEqualTypeOf<StepFunction<{ id: string }>>();
  const lookup = recorder.lookup('charge', async (): Promise<LookupResult<{ id: string }>> => ({
    found: false,
  }));
  expectTypeOf(lookup).toEqualTypeOf<StepFunction<LookupResult<{ id: string }>>>();
  // @ts-expect-error: a lookup answers found or not found
  recorder.lookup('charge', async () => ({ id: 'x' }));
  // @ts-expect-error: a step function takes the operation id first
  recorder.call('charge', async (amount: number) => amount);
  expectTypeOf<StepFunction<number>>().parameter(0).toEqualTypeOf<string>();
});
