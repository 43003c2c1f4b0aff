/**
 * Guards the third change of the postgres.js 3.4.9 patch (patches/postgres@3.4.9.patch): a new
 * connection that loses its server while postgres.js runs its own start-up query (fetch_types'
 * array types) left that query waiting, and the next connection attempt settled it. While the
 * server was down that was a rejection nobody handled (ECONNREFUSED), which killed the process:
 * the example server died so in a CI run of its outage test, in round 5 of 10. When the next
 * attempt succeeded instead, the old backend's error (57P01) was replayed onto the first query
 * and escaped unhandled too (porsager/postgres#1192, #1223). A TCP proxy in front of the real
 * server cuts the connection at that query (test/fixtures/startupQueryLosesServer.mjs). It runs
 * in a child process because an unhandled rejection would otherwise take the test runner down
 * with it; unpatched, the child exits 1 in both cases.
 */
import { fileURLToPath } from 'node:url';
import { createTestDatabase, postgresAvailable } from '@idem/fixtures';
import { describe, expect, it } from 'vitest';
import { runNodeChild } from '../fixtures/runNodeChild.js';

const available = await postgresAvailable();
const child = fileURLToPath(new URL('../fixtures/startupQueryLosesServer.mjs', import.meta.url));

const runChild = (url: string, mode: 'refuse' | 'terminate') => runNodeChild(child, [url, mode]);

describe.skipIf(!available)('postgres.js loses the server during its start-up query', () => {
  it('fails the waiting query when the next attempt is refused, and keeps the process alive', async () => {
    await using database = await createTestDatabase('idem_startup_refused');
    const run = await runChild(database.url, 'refuse');
    expect(run.stderr).not.toMatch(/ECONNREFUSED/);
    expect(run).toMatchObject({ code: 0 });
    expect(run.stdout).toContain('first query: failed ECONNREFUSED');
    expect(run.stdout).toContain('alive: 1');
  });

  it('answers the waiting query on the next connection, without the old backend error', async () => {
    await using database = await createTestDatabase('idem_startup_terminated');
    const run = await runChild(database.url, 'terminate');
    expect(run.stderr).not.toMatch(/57P01/);
    expect(run).toMatchObject({ code: 0 });
    expect(run.stdout).toContain('first query: answered 1');
    expect(run.stdout).toContain('alive: 1');
  });
});
