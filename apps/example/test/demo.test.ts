/**
 * The README's first command, `start`: the demo on embedded PGlite (a fresh data folder), through
 * a dropped response, a 503 burst and a crash with restart. It must end with exit code 0, which it
 * gives only when one order, one payment and one charge came out and every fault fired.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it, onTestFinished } from 'vitest';

const APP_DIR = fileURLToPath(new URL('..', import.meta.url));

it('the demo shows the guarantee holding and exits 0', { timeout: 120_000 }, async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'idem-demo-'));
  onTestFinished(() => rmSync(dataDir, { recursive: true, force: true }));
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/demo/start.ts'], {
    cwd: APP_DIR,
    env: { ...process.env, IDEM_EXAMPLE_DATA_DIR: dataDir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  expect(output).toContain('The guarantee held: one order and one charge');
  expect(output).toMatch(
    /ok {4}processor: cards charged 1 \(expected 1\); charge calls received 1 \(expected 1[^)]*\); lookups by operation id \d+/,
  );
  expect(output).toContain('NOT the defaults:');
  expect(output).toContain('FAULT: SIGKILL at after-charge-before-record');
  expect(code, output).toBe(0);
});
