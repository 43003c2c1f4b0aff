import { trace } from '@opentelemetry/api';
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { afterAll, describe, expect, it } from 'vitest';
import { pgliteEnv } from './fixtures/databases.js';
import { post, serve } from './fixtures/httpHarness.js';
import { createPaymentsApp } from './fixtures/paymentsApp.js';

const exporter = new InMemorySpanExporter();
trace.setGlobalTracerProvider(
  new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] }),
);
afterAll(() => trace.disable());

describe('tracing', () => {
  it('wraps the claim, each phase and each external call in a span, with ids and never bodies', async () => {
    await using env = await pgliteEnv();
    const app = createPaymentsApp(env.db, env.store);
    await using server = await serve(app.router);
    const res = await post(
      server.url,
      'pay',
      { amount: 12345 },
      { key: 'trace-key-secret', account: 'acct_trace' },
    );
    expect(res.status).toBe(200);
    const spans = exporter
      .getFinishedSpans()
      .map((s) => ({ name: s.name, step: s.attributes['idem.step'] }));
    expect(spans).toEqual([
      { name: 'idem.claim', step: undefined },
      { name: 'idem.phase', step: 'reserve' },
      { name: 'idem.external', step: 'charge' },
      { name: 'idem.phase', step: 'record' },
    ]);
    const text = JSON.stringify(exporter.getFinishedSpans().map((s) => s.attributes));
    expect(text).not.toContain('trace-key-secret');
    expect(text).not.toContain('12345');
  });
});
