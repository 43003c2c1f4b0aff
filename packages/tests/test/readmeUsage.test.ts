/**
 * The README's Usage, as a new user runs it: its blocks, as they stand, become a new package
 * under apps/ that depends on idem with `workspace:*`; `pnpm install` (offline, from the store),
 * then plain `tsc` with a plain tsconfig and plain `tsx`, no build and no special flags, against
 * a fresh PostgreSQL database, once with each driver's `db.ts`. The audit imports `router.ts`
 * with no database, and `server.ts` refuses to start without its settings. The package is removed
 * and the lockfile restored afterwards, even when a step fails.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTestDatabase, freePort, httpPost, postgresAvailable } from '@idem/fixtures';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refusingDatabase } from './support/refusingDatabase.js';
import { runToExit } from './support/runToExit.js';
import { usageBlocks, usageProgram, usageVariants } from './support/usageBlocks.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const APPS = join(ROOT, 'apps');
const SCRATCH_PREFIX = 'tmp-readme-usage-';
const available = await postgresAvailable();
const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
const variants = usageVariants(readme);

/** What the README says the package depends on, at the versions the workspace already uses. */
function scratchPackage(name: string): object {
  const example = JSON.parse(readFileSync(join(APPS, 'example/package.json'), 'utf8'));
  const from = (dep: string) =>
    (example.dependencies[dep] ?? example.devDependencies[dep]) as string;
  const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  return {
    name,
    private: true,
    type: 'module',
    dependencies: {
      '@idem/admin': 'workspace:*',
      '@idem/client': 'workspace:*',
      '@idem/contract': 'workspace:*',
      '@idem/server': 'workspace:*',
      '@idem/store-drizzle': 'workspace:*',
      '@trpc/client': from('@trpc/client'),
      '@trpc/server': from('@trpc/server'),
      'drizzle-orm': from('drizzle-orm'),
      pg: from('pg'),
      postgres: from('postgres'),
      tsx: from('tsx'),
      zod: from('zod'),
    },
    devDependencies: {
      '@types/node': root.devDependencies['@types/node'],
      '@types/pg': from('@types/pg'),
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
    // Polls a port that is not open yet: the next try, not a wait for an outcome.
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

const name = `${SCRATCH_PREFIX}${process.pid}`;
const dir = join(APPS, name);
const lockfile = join(ROOT, 'pnpm-lock.yaml');
let lockBefore: string | undefined;
const bin = (command: string) => join(dir, 'node_modules/.bin', command);

/** Writes the program's files for one driver into the package. */
function writeProgram(variant: string): void {
  for (const [file, text] of Object.entries(usageProgram(readme, variant))) {
    writeFileSync(join(dir, file), text);
  }
}

describe.skipIf(!available)("the README's Usage as a new workspace package", () => {
  beforeAll(() => {
    // A package left by a killed run would be installed with this one: remove it first.
    for (const stale of readdirSync(APPS).filter((n) => n.startsWith(SCRATCH_PREFIX))) {
      rmSync(join(APPS, stale), { recursive: true, force: true });
    }
    lockBefore = readFileSync(lockfile, 'utf8');
    mkdirSync(dir);
    writeFileSync(join(dir, 'package.json'), JSON.stringify(scratchPackage(name), null, 2));
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(plainTsconfig, null, 2));
    mustRun('pnpm', ['install', '--offline', '--no-frozen-lockfile'], ROOT);
  }, 300_000);

  afterAll(() => {
    rmSync(dir, { recursive: true, force: true });
    if (lockBefore === undefined) return;
    writeFileSync(lockfile, lockBefore);
    // Drops the scratch package's links, so the workspace is as before.
    run('pnpm', ['install', '--offline', '--frozen-lockfile'], ROOT);
    expect(readFileSync(lockfile, 'utf8')).toBe(lockBefore);
  }, 300_000);

  it('is four files, db.ts once per driver', () => {
    const names = usageBlocks(readme).map(({ file, variant }) =>
      variant ? `${file} (${variant})` : file,
    );
    expect(names.sort()).toEqual([
      'client.ts',
      'db.ts (pg)',
      'db.ts (postgres.js)',
      'router.ts',
      'server.ts',
    ]);
    expect(variants).toEqual(['postgres.js', 'pg']);
  });

  it.each(variants)(
    '%s: typechecks, runs with plain tsx: 200, replay 200 Idempotent-Replayed, 422',
    async (variant) => {
      writeProgram(variant);
      mustRun(bin('tsc'), ['-p', 'tsconfig.json'], dir);
      await using database = await createTestDatabase('idem_readme');
      const port = await freePort();
      const env = {
        DATABASE_URL: database.url,
        PORT: String(port),
        IDEM_KEY_SECRET: randomBytes(32).toString('hex'),
      };
      let output = '';
      const server = spawn(bin('tsx'), ['server.ts'], {
        cwd: dir,
        env: { ...process.env, ...env },
        detached: true, // its own process group: tsx runs node as a child
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      try {
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

        const client = run(bin('tsx'), ['client.ts'], dir, env);
        expect(client.status, `${client.stdout}\n${client.stderr}`).toBe(0);
        expect(client.stdout).toContain('one order, replayed to the second call');
        // The server printed nothing: no NOTICE from migrate, no warning (postgres.js is patched
        // in this workspace).
        expect(output).toBe('');
      } finally {
        try {
          process.kill(-server.pid!, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    },
  );

  it.each(variants)(
    '%s: idem-admin audit router.ts with DATABASE_URL unset prints the audit, opens no connection',
    async (variant) => {
      writeProgram(variant);
      await using nowhere = await refusingDatabase();
      const audit = await runToExit(bin('idem-admin'), ['audit', 'router.ts'], dir, {
        ...nowhere.env,
        IDEM_KEY_SECRET: randomBytes(32).toString('hex'),
      });
      expect(audit.status, `${audit.stdout}\n${audit.stderr}`).toBe(0);
      expect(JSON.parse(audit.stdout)).toMatchObject({
        exportName: 'appRouter',
        mutations: [
          { path: 'createOrder', decision: 'idempotent' },
          { path: 'sendReceipt', decision: 'idempotent' },
        ],
      });
      expect(nowhere.connections).toBe(0);
    },
  );

  it.each(['DATABASE_URL', 'IDEM_KEY_SECRET'])(
    'server.ts without %s exits 1 with one line naming it, before any connection',
    async (missing) => {
      writeProgram(variants[0]!);
      await using nowhere = await refusingDatabase();
      const env: NodeJS.ProcessEnv = {
        ...nowhere.env,
        DATABASE_URL: `postgres://postgres@${nowhere.env.PGHOST}:${nowhere.env.PGPORT}/postgres`,
        IDEM_KEY_SECRET: randomBytes(32).toString('hex'),
        PORT: String(await freePort()),
        [missing]: undefined,
      };
      const server = await runToExit(bin('tsx'), ['server.ts'], dir, env, 60_000);
      expect(server.status, `${server.stdout}\n${server.stderr}`).toBe(1);
      expect(server.stdout).toBe('');
      expect(server.stderr).toBe(
        `server.ts: ${missing} is not set (see "Usage" in idem's README)\n`,
      );
      expect(nowhere.connections).toBe(0);
    },
  );
});
