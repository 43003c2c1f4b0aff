/**
 * Guards the patch of postgres.js 3.4.9 (patches/postgres@3.4.9.patch): a transaction whose
 * server vanishes mid-statement must reject with CONNECTION_CLOSED, not kill the process with an
 * uncaught TypeError in `nextWrite` (porsager/postgres#1154, #1208). Without the patch the child
 * exits 1 with that TypeError on the first try. It runs in a child process because an uncaught
 * exception would otherwise take the test runner down with it.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createTestDatabase, postgresAvailable } from '@idem/testing';
import { describe, expect, it } from 'vitest';

const available = await postgresAvailable();
const child = fileURLToPath(new URL('../fixtures/transactionLosesServer.mjs', import.meta.url));

describe.skipIf(!available)('postgres.js loses the server inside a transaction', () => {
  it('rejects the transaction with CONNECTION_CLOSED, keeps the process alive and serves again', async () => {
    await using database = await createTestDatabase('idem_lost_connection');
    const run = await promisify(execFile)(process.execPath, [child, database.url], {
      timeout: 30_000,
    }).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (error: { code?: number; stdout?: string; stderr?: string }) => ({
        code: error.code,
        stdout: error.stdout ?? '',
        stderr: error.stderr ?? '',
      }),
    );
    expect(run.stderr).not.toMatch(/TypeError/);
    expect(run).toMatchObject({ code: 0 });
    expect(run.stdout).toContain('transaction: CONNECTION_CLOSED');
    expect(run.stdout).toContain('alive: 1');
  });
});
