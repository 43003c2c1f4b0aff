/**
 * idem as a new user gets it: every public package built, packed and published by pnpm to a
 * private Verdaccio (6.8.0; everything else proxied from registry.npmjs.org), then installed
 * into brand-new projects outside the workspace with npm and with pnpm. In each project the
 * README's Usage files run through tsx and compiled by tsc then plain node, against a fresh
 * PostgreSQL database (the postgres.js `db.ts`); two strict consumer tsconfigs (NodeNext,
 * and ESNext + Bundler) typecheck with skipLibCheck off; `npx idem-admin audit router.ts` checks
 * the router with no database to reach. Each packed tarball passes publint
 * and @arethetypeswrong/cli. Skipped without verdaccio on PATH unless IDEM_REQUIRE_REGISTRY=1.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  createTestDatabase,
  freePort,
  postgresAvailable,
  verdaccioAvailable,
} from '@idem/fixtures';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { refusingDatabase } from './support/refusingDatabase.js';
import { runToExit } from './support/runToExit.js';
import { usageProgram } from './support/usageBlocks.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const FIXTURES = fileURLToPath(new URL('./fixtures/registry/', import.meta.url));
const available = verdaccioAvailable() && (await postgresAvailable());

interface Manifest {
  name: string;
  version: string;
  private?: boolean;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}

const readJson = <T>(path: string): T => JSON.parse(readFileSync(path, 'utf8')) as T;

/** The workspace's public packages: every packages/* without `private`. */
const publicPackages = readdirSync(join(ROOT, 'packages'))
  .map((dir) => ({
    dir: join(ROOT, 'packages', dir),
    manifest: readJson<Manifest>(join(ROOT, 'packages', dir, 'package.json')),
  }))
  .filter(({ manifest }) => !manifest.private);

interface Ran {
  status: number | null;
  stdout: string;
  stderr: string;
}

function run(
  command: string,
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv = {},
  timeout = 240_000,
): Ran {
  const result = spawnSync(command, args, {
    cwd,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout,
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.error) throw result.error;
  return result;
}

function mustRun(
  command: string,
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv = {},
  timeout?: number,
): Ran {
  const result = run(command, args, cwd, env, timeout);
  if (result.status !== 0) {
    throw new Error(
      `${command} ${args.join(' ')} (in ${cwd}) exited ${result.status}:\n${result.stdout}\n${result.stderr}`,
    );
  }
  return result;
}

/** A temp folder, removed on dispose. */
function tempDir(prefix: string): AsyncDisposable & { path: string } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return {
    path,
    [Symbol.asyncDispose]: async () => rmSync(path, { recursive: true, force: true }),
  };
}

/** A process in its own group (tsx runs node as a child), killed with its children on dispose. */
function background(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv) {
  let output = '';
  const child: ChildProcess = spawn(command, args, {
    cwd,
    env: { ...process.env, ...env },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    output: () => output,
    async [Symbol.asyncDispose]() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
      await exited;
    },
  };
}

/** Resolves once `url` answers any HTTP status; rejects if the process exits or 60 s pass. */
async function answering(url: string, proc: ReturnType<typeof background>): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (proc.child.exitCode !== null) throw new Error(`${url}: exited early:\n${proc.output()}`);
    const up = await fetch(url).then(
      () => true,
      () => false,
    );
    if (up) return;
    if (Date.now() > deadline) throw new Error(`${url} does not answer:\n${proc.output()}`);
    // Polls a port that is not open yet: the next try, not a wait for an outcome.
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

interface Registry extends AsyncDisposable {
  url: string;
  /** An npmrc with the throwaway user's token, for publishing. */
  userconfig: string;
}

/** Verdaccio on a free port of 127.0.0.1 with a temp storage folder and a throwaway user. */
async function startVerdaccio(): Promise<Registry> {
  const dir = tempDir('idem-verdaccio-');
  const port = await freePort();
  const url = `http://127.0.0.1:${port}/`;
  const config = readFileSync(join(FIXTURES, 'verdaccio.yaml'), 'utf8')
    .replace('STORAGE', join(dir.path, 'storage'))
    .replace('HTPASSWD', join(dir.path, 'htpasswd'));
  writeFileSync(join(dir.path, 'config.yaml'), config);
  const proc = background(
    'verdaccio',
    ['--config', join(dir.path, 'config.yaml'), '--listen', `127.0.0.1:${port}`],
    dir.path,
    {},
  );
  const stop = async () => {
    await proc[Symbol.asyncDispose]();
    await dir[Symbol.asyncDispose]();
  };
  try {
    await answering(`${url}-/ping`, proc);
    // `npm adduser`, as its HTTP request: creates the user and answers its token.
    const name = `idem-${randomBytes(4).toString('hex')}`;
    const response = await fetch(`${url}-/user/org.couchdb.user:${name}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name, password: randomBytes(12).toString('hex') }),
    });
    const body = (await response.json()) as { token?: string };
    if (response.status !== 201 || !body.token) {
      throw new Error(`adduser answered ${response.status}: ${JSON.stringify(body)}`);
    }
    const userconfig = join(dir.path, 'npmrc');
    writeFileSync(userconfig, `registry=${url}\n//127.0.0.1:${port}/:_authToken=${body.token}\n`);
    return { url, userconfig, [Symbol.asyncDispose]: stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * tsc's errors in idem's declarations and in the project's own files. drizzle-orm 0.45's own
 * declarations do not check under skipLibCheck: false (its gel, mysql, sqlite and singlestore
 * builders): those are drizzle's, not idem's, and are left out here.
 */
function ownErrors(output: string): string[] {
  return output
    .split('\n')
    .filter((line) => /error TS\d+/.test(line))
    .filter((line) => !line.startsWith('node_modules/') || line.startsWith('node_modules/@idem/'));
}

/** The versions the workspace already uses for a third-party dependency. */
function workspaceVersion(dep: string): string {
  const manifests = [
    join(ROOT, 'package.json'),
    join(ROOT, 'apps/example/package.json'),
    ...publicPackages.map(({ dir }) => join(dir, 'package.json')),
  ].map((path) => readJson<Manifest>(path));
  for (const manifest of manifests) {
    for (const deps of [manifest.dependencies, manifest.devDependencies]) {
      const version = deps?.[dep];
      if (version && !version.startsWith('workspace:')) return version;
    }
  }
  throw new Error(`no workspace package depends on ${dep}`);
}

/** The README's Usage program as a new project: its dependencies, from the registry. */
function consumerPackage(): object {
  const idem = (name: string) => publicPackages.find(({ manifest }) => manifest.name === name)!;
  const dependencies: Record<string, string> = {};
  for (const name of ['@idem/server', '@idem/client', '@idem/contract', '@idem/store-drizzle']) {
    dependencies[name] = idem(name).manifest.version;
  }
  dependencies['@idem/admin'] = idem('@idem/admin').manifest.version;
  for (const dep of [
    '@trpc/server',
    '@trpc/client',
    'drizzle-orm',
    'postgres',
    'pg',
    'zod',
    'tsx',
  ]) {
    dependencies[dep] = workspaceVersion(dep);
  }
  return {
    name: 'idem-consumer',
    version: '1.0.0',
    private: true,
    type: 'module',
    dependencies,
    devDependencies: {
      typescript: workspaceVersion('typescript'),
      '@types/node': workspaceVersion('@types/node'),
      '@types/pg': workspaceVersion('@types/pg'),
    },
  };
}

/**
 * The environment that makes npm and pnpm read `path` as the user's npmrc. Both spellings: when
 * the suite runs under npm (`npx vitest`), npm has set `npm_config_userconfig` to the machine's,
 * and that one would win.
 */
const userconfig = (path: string): NodeJS.ProcessEnv => ({
  NPM_CONFIG_USERCONFIG: path,
  npm_config_userconfig: path,
});

let registry: Registry | undefined;
let build: Ran | undefined;
let packs: AsyncDisposable & { path: string };
const tarballs = new Map<string, string>();

describe.skipIf(!available)('idem from a registry, installed as a new user does', () => {
  beforeAll(async () => {
    // Every package is built and published even when one fails to compile (tsc still emits):
    // the first test reports the failure, the others show what a user would get.
    build = run(
      'pnpm',
      ['-r', '--no-bail', '--filter', './packages/*', 'build'],
      ROOT,
      {},
      300_000,
    );
    registry = await startVerdaccio();
    packs = tempDir('idem-packs-');
    for (const { dir, manifest } of publicPackages) {
      // What `pnpm publish` uploads: workspace:* rewritten, publishConfig applied.
      const packed = mustRun('pnpm', ['pack', '--pack-destination', packs.path], dir);
      const tgz = readdirSync(packs.path).find(
        (file) =>
          file.startsWith(manifest.name.replace('@', '').replace('/', '-')) &&
          file.endsWith('.tgz'),
      );
      if (!tgz)
        throw new Error(`pnpm pack wrote no tarball for ${manifest.name}:\n${packed.stdout}`);
      tarballs.set(manifest.name, join(packs.path, tgz));
      mustRun(
        'pnpm',
        ['publish', '--registry', registry.url, '--no-git-checks'],
        dir,
        userconfig(registry.userconfig),
      );
    }
  }, 540_000);

  afterAll(async () => {
    await registry?.[Symbol.asyncDispose]();
    await packs?.[Symbol.asyncDispose]();
  });

  it('builds every public package with its own tsconfig.build.json', () => {
    expect(build!.status, `${build!.stdout}\n${build!.stderr}`).toBe(0);
  });

  it('publishes every public package, its @idem dependencies at their real versions', async () => {
    expect(publicPackages.map(({ manifest }) => manifest.name).sort()).toEqual([
      '@idem/admin',
      '@idem/client',
      '@idem/contract',
      '@idem/react',
      '@idem/server',
      '@idem/store-drizzle',
      '@idem/testing',
    ]);
    const versions = new Map(
      publicPackages.map(({ manifest }) => [manifest.name, manifest.version]),
    );
    for (const { manifest } of publicPackages) {
      const response = await fetch(`${registry!.url}${manifest.name.replace('/', '%2f')}`);
      expect(response.status, manifest.name).toBe(200);
      const packument = (await response.json()) as { versions: Record<string, Manifest> };
      const published = packument.versions[manifest.version];
      expect(published, `${manifest.name}@${manifest.version}`).toBeDefined();
      for (const [dep, range] of Object.entries(published!.dependencies ?? {})) {
        expect(range, `${manifest.name} → ${dep}`).not.toMatch(/^workspace:/);
        if (dep.startsWith('@idem/'))
          expect(range, `${manifest.name} → ${dep}`).toBe(versions.get(dep));
      }
    }
  });

  it.each(publicPackages.map(({ manifest }) => manifest.name))(
    '%s: its packed tarball passes publint and @arethetypeswrong/cli',
    async (name) => {
      await using unpacked = tempDir('idem-unpacked-');
      mustRun('tar', ['-xzf', tarballs.get(name)!, '-C', unpacked.path], unpacked.path);
      const publint = run(
        'npx',
        ['-y', 'publint@0.3', '--strict', join(unpacked.path, 'package')],
        unpacked.path,
      );
      expect(publint.status, `${publint.stdout}\n${publint.stderr}`).toBe(0);
      // ESM-only by design ("type": "module", import conditions only): a require() of it from
      // CommonJS is not a supported use, so attw's CommonJS-from-ESM rule does not apply.
      const attw = run(
        'npx',
        [
          '-y',
          '@arethetypeswrong/cli@0.18',
          '--profile',
          'esm-only',
          '--format',
          'ascii',
          tarballs.get(name)!,
        ],
        unpacked.path,
      );
      expect(attw.status, `${attw.stdout}\n${attw.stderr}`).toBe(0);
    },
    240_000,
  );

  it.each(['npm', 'pnpm'])(
    'with %s: the README runs through tsx and compiled, strict tsconfigs typecheck, audit passes',
    async (manager) => {
      // The postgres.js program in full; then the pg db.ts, typechecked and run through tsx only
      // (readmeUsage.test.ts runs both drivers every way; all of it here added over a minute).
      const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
      const files = usageProgram(readme, 'postgres.js');
      expect(Object.keys(files).sort()).toEqual(['client.ts', 'db.ts', 'router.ts', 'server.ts']);
      await using project = tempDir(`idem-consumer-${manager}-`);
      const dir = project.path;
      writeFileSync(join(dir, 'package.json'), JSON.stringify(consumerPackage(), null, 2));
      writeFileSync(join(dir, '.npmrc'), `registry=${registry!.url}\n`);
      for (const [file, text] of Object.entries(files)) writeFileSync(join(dir, file), text);
      for (const config of [
        'tsconfig.nodenext.json',
        'tsconfig.bundler.json',
        'tsconfig.emit.json',
      ]) {
        copyFileSync(join(FIXTURES, config), join(dir, config));
      }
      // The user's own config, not the workspace's: a fresh project outside it.
      const env = userconfig(join(dir, '.npmrc'));
      // An install reaches the npm registry through Verdaccio's uplink: one that the network
      // failed is tried once more, from scratch, before it counts as a failure.
      const install = (...args: Parameters<typeof mustRun>) => {
        try {
          mustRun(...args);
        } catch (first) {
          rmSync(join(dir, 'node_modules'), { recursive: true, force: true });
          try {
            mustRun(...args);
          } catch (second) {
            throw new Error(
              `${(second as Error).message}\n(first attempt: ${(first as Error).message})`,
            );
          }
        }
      };
      if (manager === 'npm') {
        install(
          'npm',
          ['install', '--registry', registry!.url, '--no-audit', '--no-fund'],
          dir,
          env,
        );
      } else {
        install(
          'pnpm',
          [
            'install',
            '--registry',
            registry!.url,
            '--config.minimum-release-age=0',
            '--config.dangerously-allow-all-builds=true',
          ],
          dir,
          env,
        );
      }
      const bin = (name: string) => join(dir, 'node_modules/.bin', name);

      for (const config of ['tsconfig.nodenext.json', 'tsconfig.bundler.json']) {
        const tsc = run(bin('tsc'), ['-p', config], dir);
        expect.soft(ownErrors(tsc.stdout + tsc.stderr), `${manager}, ${config}`).toEqual([]);
      }

      const program = async (label: string, command: string, args: (file: string) => string[]) => {
        await using database = await createTestDatabase('idem_registry');
        const port = await freePort();
        const programEnv = {
          DATABASE_URL: database.url,
          PORT: String(port),
          IDEM_KEY_SECRET: randomBytes(32).toString('hex'),
        };
        await using server = background(command, args('server'), dir, programEnv);
        await answering(`http://127.0.0.1:${port}/`, server);
        const client = run(command, args('client'), dir, programEnv, 60_000);
        expect(
          client.status,
          `${label}: ${client.stdout}\n${client.stderr}\n${server.output()}`,
        ).toBe(0);
        expect(client.stdout, label).toContain('one order, replayed to the second call');
        // Outside the workspace postgres.js is unpatched: the store's start-up warning about it is
        // expected there; nothing else is printed.
        const printed = server.output().replace(/^idem: the installed postgres\.js .*\n/m, '');
        expect(printed, `${label}: the server printed nothing else`).toBe('');
      };
      await program(`${manager}, tsx`, bin('tsx'), (file) => [`${file}.ts`]);
      mustRun(bin('tsc'), ['-p', 'tsconfig.emit.json'], dir);
      await program(`${manager}, tsc then node`, process.execPath, (file) => [
        join('out', `${file}.js`),
      ]);

      // As a CI step runs it: the installed bin through npx, plain node, which loads tsx's
      // loader itself for a TypeScript module; no DATABASE_URL, and no connection opened.
      await using nowhere = await refusingDatabase();
      const audit = await runToExit('npx', ['--no', 'idem-admin', 'audit', 'router.ts'], dir, {
        ...env,
        ...nowhere.env,
        IDEM_KEY_SECRET: randomBytes(32).toString('hex'),
      });
      expect(audit.status, `${manager}: ${audit.stdout}\n${audit.stderr}`).toBe(0);
      expect(JSON.parse(audit.stdout), manager).toMatchObject({
        exportName: 'appRouter',
        mutations: [
          { path: 'createOrder', decision: 'idempotent' },
          { path: 'sendReceipt', decision: 'idempotent' },
        ],
      });
      expect(nowhere.connections, `${manager}: connections`).toBe(0);

      // The other driver: node-postgres, from the same install.
      writeFileSync(join(dir, 'db.ts'), usageProgram(readme, 'pg')['db.ts']!);
      const pgTsc = run(bin('tsc'), ['-p', 'tsconfig.nodenext.json'], dir);
      expect.soft(ownErrors(pgTsc.stdout + pgTsc.stderr), `${manager}, pg`).toEqual([]);
      await program(`${manager}, pg, tsx`, bin('tsx'), (file) => [`${file}.ts`]);
    },
    420_000,
  );
});
