import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

/**
 * Whether the installed postgres.js survives a database outage. Unfixed, an outage can end the
 * process: the connection's start-up query rejects with nobody listening (an unhandled
 * rejection), and a write scheduled on a socket already gone throws an uncaught TypeError in
 * `nextWrite`. No released postgres.js carries the fix (3.4.9 is the newest release and lacks
 * it); the patch shipped in `patches/` does. The patched `nextWrite` begins by checking
 * `socket === null`: that line is the marker read here, in both builds (ESM `src/`, CJS
 * `cjs/src/`), so a copy counts as fixed only when the code a user loads is.
 */
export type PostgresJsOutageFix =
  | { readonly fixed: true; readonly version: string }
  | { readonly fixed: false; readonly version: string }
  | { readonly fixed: 'unknown' };

const NEXT_WRITE_CHECKS_SOCKET =
  /function nextWrite\(fn\) \{\s*(?:\/\/[^\n]*\n\s*)*if \(socket === null\)/;

/**
 * Reads the postgres.js package at `packageDir`, or the one this module resolves (the peer
 * dependency the user's `db` client comes from). `'unknown'` when it cannot be found or read:
 * a bundled or unusual install, about which nothing is said.
 */
export function postgresJsOutageFix(packageDir?: string): PostgresJsOutageFix {
  try {
    const dir = packageDir ?? findPackageDir();
    if (dir === undefined) return { fixed: 'unknown' };
    const { version } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
      version: string;
    };
    const builds = ['src/connection.js', 'cjs/src/connection.js'].map((file) =>
      readFileSync(join(dir, file), 'utf8'),
    );
    return { fixed: builds.every((text) => NEXT_WRITE_CHECKS_SOCKET.test(text)), version };
  } catch {
    return { fixed: 'unknown' };
  }
}

/** postgres.js does not export its package.json: walk up from its entry to the package root. */
function findPackageDir(): string | undefined {
  let dir = dirname(createRequire(import.meta.url).resolve('postgres'));
  for (let depth = 0; depth < 4; depth++) {
    try {
      const { name } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
        name?: string;
      };
      if (name === 'postgres') return dir;
    } catch {
      // No package.json at this level (cjs/src has none): keep walking up.
    }
    dir = dirname(dir);
  }
  return undefined;
}

/** The start-up warning for an unfixed postgres.js, naming the fixes. */
export function postgresJsOutageWarning(version: string): string {
  return (
    `idem: the installed postgres.js ${version} can crash the process during a database ` +
    'outage (an unhandled rejection from a connection start-up query, or an uncaught TypeError ' +
    "in nextWrite), so idem's retries never get to run. Fix it with one of: apply the patch " +
    'shipped in @idem/store-drizzle/patches/postgres@3.4.9.patch (copy it into your project ' +
    'and list it under pnpm patchedDependencies: `postgres@3.4.9: patches/postgres@3.4.9.patch`); ' +
    'use the node-postgres store (@idem/store-drizzle/node-postgres, on `pg`); or a postgres.js ' +
    'release that carries the fix. Once acknowledged, pass postgresJsOutageWarning: false to ' +
    'createPostgresJsStore.'
  );
}

/** The postgres.js copies already warned about ('' for the resolved one). */
const warnedFor = new Set<string>();

/** Warns once per process and copy when the installed postgres.js lacks the outage fix. */
export function warnOnceIfOutageUnfixed(
  onWarning: (message: string) => void,
  packageDir?: string,
): void {
  const key = packageDir ?? '';
  if (warnedFor.has(key)) return;
  const fix = postgresJsOutageFix(packageDir);
  if (fix.fixed !== false) return;
  warnedFor.add(key);
  onWarning(postgresJsOutageWarning(fix.version));
}
