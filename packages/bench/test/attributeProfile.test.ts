/**
 * The budget's attribution of a V8 profile to categories, on a hand-made profile whose answer is
 * known: self time by sample durations, builtins and node's JS counted for their caller, node's
 * network I/O for the HTTP side, the microtask queue apart, and pnpm's folder names (which list
 * peer dependencies) never mistaken for the package.
 */
import { describe, expect, it } from 'vitest';
import { attributeProfile, type CpuProfile } from '../src/attributeProfile.js';
import { categoryOf, shortUrl } from '../src/profileCategories.js';

const root = '/work/idem';
const pnpm = `file://${root}/node_modules/.pnpm`;
const DRIZZLE = `${pnpm}/drizzle-orm@0.45.4_@electric-sql+pglite@0.5.17_@opentelemetry+api@1.10.0_postgres@3.4.9_e809/node_modules/drizzle-orm`;
const POSTGRES = `${pnpm}/postgres@3.4.9_patch_hash=e937/node_modules/postgres/src`;
const TRPC = `${pnpm}/@trpc+server@11.25.2_typescript@7.0.2/node_modules/@trpc/server/dist`;

describe('categoryOf', () => {
  it.each([
    [`${DRIZZLE}/sql/sql.js`, 'SQL building'],
    [`${DRIZZLE}/pg-core/dialect.js`, 'SQL building'],
    [`${DRIZZLE}/postgres-js/session.js`, 'Drizzle session'],
    [`${POSTGRES}/connection.js`, 'driver'],
    [
      `${pnpm}/@electric-sql+pglite@0.5.17/node_modules/@electric-sql/pglite/dist/index.js`,
      'driver',
    ],
    [`${TRPC}/resolveResponse-2MBY36PP.mjs`, 'tRPC'],
    [`${pnpm}/zod@4.6.7/node_modules/zod/v4/core/schemas.js`, 'Zod'],
    [
      `${pnpm}/@opentelemetry+api@1.10.0/node_modules/@opentelemetry/api/build/src/api/trace.js`,
      'telemetry',
    ],
    [`file://${root}/packages/server/src/request/keyHash.ts`, 'idem request prep'],
    [`file://${root}/packages/server/src/request/createIdemRuntime.ts`, 'idem other'],
    [`file://${root}/packages/server/src/telemetry/idemTelemetry.ts`, 'telemetry'],
    [`file://${root}/packages/contract/src/reasons.ts`, 'idem other'],
    [`file://${root}/packages/store-drizzle/src/claimStatements.ts`, 'store'],
    // The same from the packages' builds (the bench's default, --from=dist).
    [`file://${root}/packages/server/dist/request/keyHash.js`, 'idem request prep'],
    [`file://${root}/packages/server/dist/request/createIdemRuntime.js`, 'idem other'],
    [`file://${root}/packages/server/dist/telemetry/idemTelemetry.js`, 'telemetry'],
    [`file://${root}/packages/contract/dist/reasons.js`, 'idem other'],
    [`file://${root}/packages/store-drizzle/dist/claimStatements.js`, 'store'],
    [`file://${root}/packages/bench/src/benchApp.ts`, 'bench app'],
    [`${pnpm}/tsx@4.23.15/node_modules/tsx/dist/esm/index.mjs`, 'other'],
    ['wasm://wasm/022c915e', 'PGlite database (wasm)'],
    ['node:internal/process/task_queues', 'async machinery'],
    ['node:internal/webstreams/readablestream', 'tRPC'],
    ['node:_http_server', null],
    ['', null],
  ])('%s is %s', (url, category) => {
    expect(categoryOf('f', url)).toBe(category);
  });

  it('knows V8 pseudo-frames by name', () => {
    expect(categoryOf('(idle)', '')).toBe('idle');
    expect(categoryOf('(garbage collector)', '')).toBe('GC');
    expect(categoryOf('(program)', '')).toBe('V8 (program)');
    expect(categoryOf('runMicrotasks', '')).toBe('async machinery');
  });
});

it('shortUrl keeps the path inside the package, and a line only for JavaScript', () => {
  expect(shortUrl(`${POSTGRES}/connection.js`, 223)).toBe('postgres/src/connection.js:224');
  expect(shortUrl(`file://${root}/packages/server/src/request/keyHash.ts`, 0)).toBe(
    'packages/server/src/request/keyHash.ts',
  );
  expect(shortUrl('', 0)).toBe('(builtin)');
});

describe('attributeProfile', () => {
  const frame = (functionName: string, url = '') => ({ functionName, url, lineNumber: 0 });
  // (root)
  // ├ onStreamRead (node I/O)     ─ emit (node) ─ handle (postgres.js) ─ writeBuffer (builtin)
  // ├ processTicksAndRejections   ─ runMicrotasks ─ resolveResponse (tRPC) ─ writev (node I/O)
  // ├ (garbage collector)
  // └ (idle)
  const profile: CpuProfile = {
    nodes: [
      { id: 1, callFrame: frame('(root)'), children: [2, 6, 10, 11] },
      {
        id: 2,
        callFrame: frame('onStreamRead', 'node:internal/stream_base_commons'),
        children: [3],
      },
      { id: 3, callFrame: frame('emit', 'node:events'), children: [4] },
      { id: 4, callFrame: frame('handle', `${POSTGRES}/connection.js`), children: [5] },
      { id: 5, callFrame: frame('writeBuffer') },
      {
        id: 6,
        callFrame: frame('processTicksAndRejections', 'node:internal/process/task_queues'),
        children: [7],
      },
      { id: 7, callFrame: frame('runMicrotasks'), children: [8] },
      { id: 8, callFrame: frame('resolveResponse', `${TRPC}/resolveResponse.mjs`), children: [9] },
      { id: 9, callFrame: frame('writev', 'node:internal/stream_base_commons') },
      { id: 10, callFrame: frame('(garbage collector)') },
      { id: 11, callFrame: frame('(idle)') },
    ],
    startTime: 1_000,
    // Samples at 1_010, 1_020, 1_050, 1_060, 1_100, 1_110, 1_200 (each lasts until the next),
    // so their nodes get 10, 30, 10, 40, 10, 90 and, until endTime, 100 µs.
    samples: [2, 4, 5, 8, 9, 10, 11],
    timeDeltas: [10, 10, 30, 10, 40, 10, 90],
    endTime: 1_300,
  };

  it('sums each sample until the next one into the category of its frame or its caller', () => {
    const { byCategory, durationUs } = attributeProfile(profile);
    expect(durationUs).toBe(300);
    expect(byCategory['node http']).toBe(10 + 10); // onStreamRead at the top; the response's writev
    expect(byCategory.driver).toBe(30 + 10); // postgres.js, and its socket write
    expect(byCategory.tRPC).toBe(40);
    expect(byCategory.GC).toBe(90);
    expect(byCategory.idle).toBe(100);
    expect(byCategory['async machinery']).toBe(0);
  });

  it('lists functions by self time, with their category', () => {
    const { functions } = attributeProfile(profile);
    expect(functions[0]).toEqual({ name: '(idle)', url: '(builtin)', category: 'idle', us: 100 });
    expect(functions).toContainEqual({
      name: 'writeBuffer',
      url: '(builtin)',
      category: 'driver',
      us: 10,
    });
    expect(functions).toContainEqual({
      name: 'writev',
      url: 'node:internal/stream_base_commons:1',
      category: 'node http',
      us: 10,
    });
  });
});
