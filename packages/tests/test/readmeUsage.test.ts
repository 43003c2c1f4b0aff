/**
 * The README's Usage, as a new user runs it: its two blocks, as they stand, become a new package
 * under apps/ that depends on idem with `workspace:*`; `pnpm install` (offline, from the store),
 * then plain `tsc` with a plain tsconfig and plain `tsx`, no build and no special flags, against
 * a fresh PostgreSQL database. The package is removed and the lockfile restored afterwards, even
 * when a step fails.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTestDatabase, httpPost, postgresAvailable } from '@idem/fixtures';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const APPS = join(ROOT, 'apps');
const SCRATCH_PREFIX = 'tmp-readme-usage-';
const available = await postgresAvailable();

/** The ```ts blocks of the README's Usage section, by the file name on their first line. */
function usageFiles(readme: string): Record<string, string> {
  const start = readme.indexOf('\n## Usage\n');
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end === -1 ? undefined : end);
  const files: Record<string, string> = {};
  for (const match of section.matchAll(/^```ts\n([\s\S]*?)^```/gm)) {
    const name = /^\/\/ ([\w.-]+\.ts)\b/.exec(match[1]!)?.[1];
    if (name) files[name] = match[1]!;
  }
  return files;
}

/** What the README says the package depends on, at the versions the workspace already uses. */
function scratchPackage(name: string): object {
  const example = JSON.parse(readFileSync(join(APPS, 'example/package.json'), 'utf8'));
  const from = (dep: string) => example.dependencies[dep] as string;
  const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  return {
    name,
    private: true,
    type: 'module',
    dependencies: {
      '@idem/client': 'workspace:*',
      '@idem/contract': 'workspace:*',
      '@idem/server': 'workspace:*',
      '@idem/store-drizzle': 'workspace:*',
      '@trpc/client': from('@trpc/client'),
      '@trpc/server': from('@trpc/server'),
      'drizzle-orm': from('drizzle-orm'),
      postgres: from('postgres'),
      tsx: from('tsx'),
      zod: from('zod'),
    },
    devDependencies: {
      '@types/node': root.devDependencies['@types/node'],
      typescript: root.devDependencies.typescript,
    },
  };
}

/** A plain tsconfig, as `tsc --init` users write it: no paths, no custom conditions. */
const plainTsconfig = {
  compilerOptions: {
    target: 'ES2022',
    module: 'NodeNext',
    strict: true,
    skipLibCheck: true,
    noEmit: true,
    types: ['node'],
  },
};

function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}) {
  const result = spawnSync(command, args, {
    cwd,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 240_000,
  });
  if (result.error) throw result.error;
  return result;
}

function mustRun(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}) {
  const result = run(command, args, cwd, env);
  if (result.status !== 0) {
    throw new Error(
      `${command} ${args.join(' ')} exited ${result.status}:\n${result.stdout}\n${result.stderr}`,
    );
  }
  return result;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Resolves once the port accepts connections; rejects if the process exits or 60 s pass. */
async function listening(port: number, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`server.ts exited early:\n${output()}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.on('connect', () => (socket.end(), resolve(true)));
      socket.on('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`server.ts is not listening:\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe.skipIf(!available)("the README's Usage as a new workspace package", () => {
  it('installs, typechecks, runs with plain tsx: 200, replay 200 Idempotent-Replayed, 422', async () => {
    const files = usageFiles(readFileSync(join(ROOT, 'README.md'), 'utf8'));
    expect(Object.keys(files).sort()).toEqual(['client.ts', 'server.ts']);

    // A package left by a killed run would be installed with this one: remove it first.
    for (const stale of readdirSync(APPS).filter((n) => n.startsWith(SCRATCH_PREFIX))) {
      rmSync(join(APPS, stale), { recursive: true, force: true });
    }
    const name = `${SCRATCH_PREFIX}${process.pid}`;
    const dir = join(APPS, name);
    const lockfile = join(ROOT, 'pnpm-lock.yaml');
    const lockBefore = readFileSync(lockfile, 'utf8');
    await using database = await createTestDatabase('idem_readme');
    let server: ChildProcess | undefined;
    try {
      mkdirSync(dir);
      writeFileSync(join(dir, 'package.json'), JSON.stringify(scratchPackage(name), null, 2));
      writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(plainTsconfig, null, 2));
      for (const [file, text] of Object.entries(files)) writeFileSync(join(dir, file), text);

      mustRun('pnpm', ['install', '--offline', '--no-frozen-lockfile'], ROOT);
      mustRun(join(dir, 'node_modules/.bin/tsc'), ['-p', 'tsconfig.json'], dir);
      // The operator CLI runs from the new package too, with nothing built.
      expect(mustRun('pnpm', ['exec', 'idem-admin', '--help'], dir).stdout).toContain('audit');

      const port = await freePort();
      const env = {
        DATABASE_URL: database.url,
        PORT: String(port),
        IDEM_KEY_SECRET: randomBytes(32).toString('hex'),
      };
      let output = '';
      server = spawn(join(dir, 'node_modules/.bin/tsx'), ['server.ts'], {
        cwd: dir,
        env: { ...process.env, ...env },
        detached: true, // its own process group: tsx runs node as a child
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      server.stdout!.on('data', (chunk) => (output += chunk));
      server.stderr!.on('data', (chunk) => (output += chunk));
      await listening(port, server, () => output);

      const order = { cartId: 'cart_7', sku: 'tea', quantity: 2 };
      const call = (input: object) =>
        httpPost(`http://127.0.0.1:${port}/createOrder`, JSON.stringify(input), {
          'Idempotency-Key': 'order-cart_7',
          authorization: 'Bearer token-alice',
        });
      const first = await call(order);
      expect(first.status, first.text).toBe(200);
      expect(first.headers['idempotent-replayed']).toBeUndefined();
      const replay = await call(order);
      expect(replay.status).toBe(200);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.text).toBe(first.text);
      const reused = await call({ ...order, quantity: 3 });
      expect(reused.status).toBe(422);
      expect(reused.json.error.data.idem.reason).toBe('IDEMPOTENCY_KEY_REUSED');

      const client = run(join(dir, 'node_modules/.bin/tsx'), ['client.ts'], dir, env);
      expect(client.status, `${client.stdout}\n${client.stderr}`).toBe(0);
      expect(client.stdout).toContain('one order, replayed to the second call');
      // The server printed nothing: no NOTICE from migrate, no warning.
      expect(output).toBe('');
    } finally {
      if (server?.pid) {
        try {
          process.kill(-server.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      rmSync(dir, { recursive: true, force: true });
      writeFileSync(lockfile, lockBefore);
      // Drops the scratch package's links, so the workspace is as before.
      run('pnpm', ['install', '--offline', '--frozen-lockfile'], ROOT);
    }
    expect(readFileSync(lockfile, 'utf8')).toBe(lockBefore);
  });
});
