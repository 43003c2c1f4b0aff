import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/**
 * What the bench measures idem from (`--from`):
 * - `dist` (the default): idem's packages as they are published, built by `tsc` into `dist/`
 *   and loaded through the `@idem/dist` export condition. This is the JavaScript users run.
 * - `source`: the workspace's TypeScript sources through tsx, as the tests run them. tsx
 *   compiles with esbuild's `keepNames`, which wraps every function a request creates in a
 *   `__name()` call (an `Object.defineProperty`): idem's and the store's code pays for that on
 *   every request, and the plain baseline, mostly tRPC, Drizzle and postgres.js from
 *   `node_modules`, does not. Slower than what users run; for comparison only.
 *
 * The bench's own code (the measured router, the server, the load generator) runs through tsx
 * either way, for every variant alike.
 */
export type BenchFrom = 'dist' | 'source';

/** The workspace packages the bench server and load generator import, in build order. */
const PACKAGES = ['contract', 'store-drizzle', 'server', 'client'] as const;

const root = fileURLToPath(new URL('../../../', import.meta.url));
const tsc = `${root}node_modules/.bin/tsc`;

/**
 * Builds the packages the bench imports (`tsc -p tsconfig.build.json`, as `pnpm build` does),
 * so that `--from=dist` never measures a stale build. A few seconds.
 */
export async function buildPackages(): Promise<void> {
  for (const name of PACKAGES) {
    await promisify(execFile)(tsc, ['-p', 'tsconfig.build.json'], {
      cwd: `${root}packages/${name}`,
      maxBuffer: 16 * 2 ** 20,
    }).catch((error: Error & { stdout?: string }) => {
      throw new Error(
        `the bench measures idem from its built packages, and packages/${name} does not build: fix it, or run with --from=source\n${error.stdout ?? error.message}`,
      );
    });
  }
}

/**
 * The environment that makes a child process load idem as `from` says: `--conditions=@idem/dist`
 * in `NODE_OPTIONS` (kept with what is there already) for `dist`, nothing for `source`.
 */
export function fromEnv(from: BenchFrom, env: NodeJS.ProcessEnv): Record<string, string> {
  if (from === 'source') return {};
  const options = env.NODE_OPTIONS?.trim();
  return {
    NODE_OPTIONS: options ? `${options} --conditions=@idem/dist` : '--conditions=@idem/dist',
  };
}
