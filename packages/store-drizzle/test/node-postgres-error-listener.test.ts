/**
 * Why createNodePostgresStore listens on every client its pool hands out: a pg client whose
 * connection dies emits 'error', and Node ends the process for an 'error' no one listens to.
 * `pool.on('error')` covers idle clients only, not the one a Drizzle transaction holds. It runs
 * in a child process because the failure would take the test runner down with it. Should pg
 * start listening itself, the first two cases fail, and the store's listener can be revisited.
 */
import { fileURLToPath } from 'node:url';
import { createTestDatabase, postgresAvailable } from '@idem/fixtures';
import { describe, expect, it } from 'vitest';
import { runNodeChild } from './fixtures/runNodeChild.js';

const available = await postgresAvailable();
const child = fileURLToPath(new URL('./fixtures/pgPoolLosesServer.mjs', import.meta.url));

describe.skipIf(!available)('a pg pool loses its server inside a transaction', () => {
  it.each([
    ['no listener', 'none'],
    ['a listener on the pool only', 'pool'],
  ])('with %s, the process ends with an unhandled error event', async (_, mode) => {
    await using database = await createTestDatabase('idem_pg_listener');
    const run = await runNodeChild(child, [database.url, mode]);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toMatch(/Unhandled 'error' event/);
    expect(run.stdout).not.toContain('alive');
  });

  it('with a listener on every client handed out, the transaction fails and the pool serves again', async () => {
    await using database = await createTestDatabase('idem_pg_listener');
    const run = await runNodeChild(child, [database.url, 'clients']);
    expect(run).toMatchObject({ code: 0 });
    expect(run.stdout).toContain('transaction: failed');
    expect(run.stdout).toContain('alive: 1');
  });
});
