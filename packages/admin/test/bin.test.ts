/**
 * `idem-admin` as a consumer runs it: `pnpm exec idem-admin` from the workspace root and from a
 * package that does not depend on @idem/admin, straight from the TypeScript source (no build).
 * `idem-admin audit <module>` is what a consumer's CI runs: exit 1 on an undecided mutation, even
 * one inside a lazy() router, or on one marked both retry-safe and idempotent.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const ADMIN = fileURLToPath(new URL('..', import.meta.url));

function pnpmExec(cwd: string, ...args: string[]) {
  const { DATABASE_URL: _unset, ...env } = process.env;
  const result = spawnSync('pnpm', ['exec', 'idem-admin', ...args], {
    cwd,
    env,
    encoding: 'utf8',
    timeout: 60_000,
  });
  if (result.error) throw result.error;
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('pnpm exec idem-admin', () => {
  it.each([
    ['the workspace root', ROOT],
    ['a package without @idem/admin', `${ROOT}/packages/contract`],
  ])('--help runs from %s', (_, cwd) => {
    const { status, stdout } = pnpmExec(cwd, '--help');
    expect(status).toBe(0);
    expect(stdout).toContain('audit <module>');
  });

  it('audit exits 1 on an undecided mutation inside a lazy() router, naming it', () => {
    const { status, stdout, stderr } = pnpmExec(ADMIN, 'audit', 'test/fixtures/lazyRouter.ts');
    expect(status).toBe(1);
    expect(stderr).toContain('billing.refund: neither declares idempotency');
    expect(JSON.parse(stdout)).toMatchObject({
      exportName: 'appRouter',
      undecided: ['billing.refund'],
      mutations: [
        { path: 'billing.charge', decision: 'idempotent' },
        { path: 'billing.refund', decision: 'undecided' },
        { path: 'orders.cancel', decision: 'retry-unsafe' },
        { path: 'orders.create', decision: 'idempotent' },
      ],
    });
  });

  it('audit exits 0 when every mutation is decided (module path relative to the caller)', () => {
    const { status, stdout } = pnpmExec(
      ROOT,
      'audit',
      'packages/admin/test/fixtures/decidedRouter.ts',
    );
    expect(status).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({
      exportName: 'router',
      mutations: [
        { path: 'archive', decision: 'retry-safe', reason: 'sets archived = true' },
        { path: 'billing.charge', decision: 'idempotent' },
      ],
      undecided: [],
      misplaced: [],
    });
  });

  it('audit exits 1 on a mutation marked both retrySafe() and idem.procedure(), naming the fix', () => {
    const { status, stdout, stderr } = pnpmExec(
      ADMIN,
      'audit',
      'test/fixtures/conflictingRouter.ts',
    );
    expect(status).toBe(1);
    expect(stderr.trim().split('\n')).toEqual([
      'idem-admin audit: cart.archive: retrySafe() and idem.procedure() together: a mutation either is safe to retry by nature or takes a key; drop retrySafe() if a second run could change anything, else drop idem.procedure()',
    ]);
    expect(JSON.parse(stdout)).toMatchObject({
      mutations: [
        { path: 'cart.archive', decision: 'idempotent' },
        { path: 'cart.remove', decision: 'retry-safe', reason: 'deletes by id' },
      ],
      undecided: [],
      misplaced: [{ path: 'cart.archive' }],
    });
  });

  it('audit refuses an operation id and names the command that takes one', () => {
    const { status, stderr } = pnpmExec(ADMIN, 'audit', '0b5e7a9c-1d2e-4f30-8a6b-9c0d1e2f3a4b');
    expect(status).toBe(2);
    expect(stderr).toContain('idem-admin history 0b5e7a9c');
  });
});
