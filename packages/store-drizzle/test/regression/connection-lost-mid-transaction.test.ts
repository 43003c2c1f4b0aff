/**
 * Guards the patch of postgres.js 3.4.9 (patches/postgres@3.4.9.patch): a transaction whose
 * server vanishes mid-statement must reject with CONNECTION_CLOSED, not kill the process with an
 * uncaught TypeError in `nextWrite` (porsager/postgres#1154, #1208). Without the patch the child
 * exits 1 with that TypeError on the first try. It runs in a child process because an uncaught
 * exception would otherwise take the test runner down with it.
 */
import { fileURLToPath } from 'node:url';
import { createTestDatabase, postgresAvailable } from '@idem/fixtures';
import { describe, expect, it } from 'vitest';
import { runNodeChild } from '../fixtures/runNodeChild.js';

const available = await postgresAvailable();
const child = fileURLToPath(new URL('../fixtures/transactionLosesServer.mjs', import.meta.url));

describe.skipIf(!available)('postgres.js loses the server inside a transaction', () => {
  it('rejects the transaction with CONNECTION_CLOSED, keeps the process alive and serves again', async () => {
    await using database = await createTestDatabase('idem_lost_connection');
    const run = await runNodeChild(child, [database.url]);
    expect(run.stderr).not.toMatch(/TypeError/);
    expect(run).toMatchObject({ code: 0 });
    expect(run.stdout).toContain('transaction: CONNECTION_CLOSED');
    expect(run.stdout).toContain('alive: 1');
  });
});
