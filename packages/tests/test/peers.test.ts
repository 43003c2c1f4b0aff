/**
 * `pnpm install` prints no unmet-peer warning: every peer range in the lockfile is met (this is
 * the check behind install's "Issues with peer dependencies found" line).
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

it('pnpm peers check finds no unmet peer dependency', () => {
  const result = spawnSync('pnpm', ['peers', 'check'], { cwd: ROOT, encoding: 'utf8' });
  if (result.error) throw result.error;
  expect(result.stdout + result.stderr).toContain('No peer dependency issues found');
  expect(result.status).toBe(0);
});
