import { spawnSync } from 'node:child_process';

/** The Verdaccio the registry suite runs: 6.8.0, the last release that runs on Node 20. */
export const VERDACCIO_VERSION = '6.8.0';

/**
 * Whether `verdaccio` 6.8.0 is on PATH. Required when IDEM_REQUIRE_REGISTRY=1 (as .ci/run sets
 * it): a missing or different binary then fails the run instead of skipping the suite.
 */
export function verdaccioAvailable(): boolean {
  const probe = spawnSync('verdaccio', ['--version'], { encoding: 'utf8' });
  const version = probe.status === 0 ? probe.stdout.trim().replace(/^v/, '') : null;
  if (version === VERDACCIO_VERSION) return true;
  const found = version === null ? 'verdaccio is not installed' : `verdaccio is ${version}`;
  if (process.env.IDEM_REQUIRE_REGISTRY === '1') {
    throw new Error(
      `Verdaccio ${VERDACCIO_VERSION} is required (IDEM_REQUIRE_REGISTRY=1) but ${found}: npm install -g verdaccio@${VERDACCIO_VERSION}`,
    );
  }
  console.warn(
    `\n!!! ${found}: the registry suite is SKIPPED. npm install -g verdaccio@${VERDACCIO_VERSION}, ` +
      `or IDEM_REQUIRE_REGISTRY=1 to make this an error.\n`,
  );
  return false;
}
