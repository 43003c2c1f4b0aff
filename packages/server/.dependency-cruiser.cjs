/**
 * The server's floors: each floor imports only from its own floor and the floors below it.
 *
 *   0  src/types/                      shared types (IdemJob, IdemRuntime, options, events)
 *   1  src/errors/, src/hashing/, src/telemetry/, src/trpc/trpcInternals.ts
 *   2  src/phases/ (external mode's phase tools), src/replay/
 *   3  src/executors/ (local, at-commit, external)
 *   4  src/request/, src/operations/, src/workers/
 *   5  src/trpc/ (the adapter), src/createIdempotency.ts, src/index.ts, src/operator.ts
 *
 * Run with `pnpm --filter @idem/server lint:layers` (scripts/check-layers.sh; `pnpm lint` runs it
 * too, in CI); test files are not cruised.
 */
const floor0 = '^src/types/';
const floor1 = '^src/(errors|hashing|telemetry)/|^src/trpc/trpcInternals\\.ts$';
const floor2 = '^src/(phases|replay)/';
const floor3 = '^src/executors/';
const floor4 = '^src/(request|operations|workers)/';
const above = (...floors) => floors.join('|');
const floor5 = '^src/trpc/(?!trpcInternals\\.ts$)|^src/[^/]+\\.ts$';

const upward = (name, from, to) => ({
  name,
  severity: 'error',
  comment: 'An import runs from a lower floor up to a higher one: move the shared part down.',
  from: { path: from },
  to: { path: to },
});

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Modules that import each other, directly or around a loop.',
      from: {},
      to: { circular: true },
    },
    upward('floor-0-types-only', floor0, above(floor1, floor2, floor3, floor4, floor5)),
    upward('floor-1-below-phases', floor1, above(floor2, floor3, floor4, floor5)),
    upward('floor-2-below-executors', floor2, above(floor3, floor4, floor5)),
    upward('floor-3-below-requests', floor3, above(floor4, floor5)),
    upward('floor-4-below-the-adapter', floor4, floor5),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.test\\.ts$|\\.test-d\\.ts$' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
