import { execFile, spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { postgresRequired } from './testDatabase.js';
import { freePort, serviceUser, type ServiceUser } from './systemUser.js';

const run = promisify(execFile);

/** Where PostgreSQL's server programs are (initdb, pg_ctl, pg_basebackup). */
export function postgresBinDir(): string | null {
  const candidates = [process.env.IDEM_TEST_PG_BIN, '/usr/lib/postgresql/15/bin'];
  for (const dir of candidates) {
    if (dir && existsSync(join(dir, 'pg_ctl')) && existsSync(join(dir, 'initdb'))) return dir;
  }
  const onPath = spawnSync('pg_config', ['--bindir'], { encoding: 'utf8' });
  const dir = onPath.status === 0 ? onPath.stdout.trim() : '';
  return dir && existsSync(join(dir, 'pg_ctl')) ? dir : null;
}

/** Whether private clusters can be made here; required in CI like PostgreSQL itself. */
export function privateClustersAvailable(): boolean {
  if (postgresBinDir() !== null) return true;
  if (postgresRequired()) {
    throw new Error(
      'PostgreSQL server programs (initdb, pg_ctl) are required (CI or IDEM_REQUIRE_POSTGRES=1); set IDEM_TEST_PG_BIN',
    );
  }
  console.warn('\n!!! initdb/pg_ctl not found: the private-cluster suites are SKIPPED.\n');
  return false;
}

/**
 * A PostgreSQL cluster of a test's own, in a temporary folder on a free port, that the test may
 * stop, crash and promote (what it must never do to the shared server at 5432). Trust auth for
 * user `postgres` on 127.0.0.1; replication allowed. Dispose to stop it and delete its folder.
 */
export interface PrivateCluster extends AsyncDisposable {
  port: number;
  dataDir: string;
  /** A connection string to `database` on it (default `postgres`). */
  url(database?: string): string;
  start(): Promise<void>;
  /** `pg_ctl stop -m immediate`: every backend dies at once, as in a crash. */
  crash(): Promise<void>;
  /** Promotes a standby to primary and waits until it accepts writes. */
  promote(): Promise<void>;
  /** Stops it (immediately) and deletes its folder. */
  destroy(): Promise<void>;
}

/** Lines appended to postgresql.conf: small and fast, fit for a test on a shared 2-core machine. */
const BASE_SETTINGS = [
  "listen_addresses = '127.0.0.1'",
  "unix_socket_directories = ''",
  'max_connections = 60',
  'shared_buffers = 16MB',
  'wal_level = replica',
  'max_wal_senders = 4',
  'fsync = on',
  'logging_collector = off',
];

/** Creates (initdb) and starts a primary with `settings` added to postgresql.conf. */
export async function createPrivateCluster(settings: string[] = []): Promise<PrivateCluster> {
  const user = serviceUser();
  const dir = mkdtempSync(join(tmpdir(), 'idem-cluster-'));
  user.own(dir);
  const dataDir = join(dir, 'data');
  await as(user, 'initdb', [
    '-D',
    dataDir,
    '-U',
    'postgres',
    '-A',
    'trust',
    '--no-sync',
    '-E',
    'UTF8',
  ]);
  appendFileSync(
    join(dataDir, 'pg_hba.conf'),
    'host replication postgres 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 trust\n',
  );
  const port = await freePort();
  appendFileSync(
    join(dataDir, 'postgresql.conf'),
    [...BASE_SETTINGS, `port = ${port}`, ...settings, ''].join('\n'),
  );
  const cluster = handle(user, dir, dataDir, port);
  await cluster.start();
  return cluster;
}

/**
 * Creates a streaming standby of `primary` (pg_basebackup -R) named `name` in
 * `primary_conninfo` (what `synchronous_standby_names` on the primary refers to) and starts it.
 */
export async function createStandby(
  primary: PrivateCluster,
  name: string,
  settings: string[] = [],
): Promise<PrivateCluster> {
  const user = serviceUser();
  const dir = mkdtempSync(join(tmpdir(), 'idem-standby-'));
  user.own(dir);
  const dataDir = join(dir, 'data');
  await as(user, 'pg_basebackup', [
    '-h',
    '127.0.0.1',
    '-p',
    String(primary.port),
    '-U',
    'postgres',
    '-D',
    dataDir,
    '-R',
    '-X',
    'stream',
    '--no-sync',
    // An immediate checkpoint: the default (spread) can take minutes.
    '--checkpoint=fast',
    '-d',
    `application_name=${name}`,
  ]);
  const port = await freePort();
  appendFileSync(join(dataDir, 'postgresql.conf'), [`port = ${port}`, ...settings, ''].join('\n'));
  const cluster = handle(user, dir, dataDir, port);
  await cluster.start();
  return cluster;
}

function handle(user: ServiceUser, dir: string, dataDir: string, port: number): PrivateCluster {
  const logFile = join(dir, 'server.log');
  let destroyed: Promise<void> | undefined;
  const destroy = () =>
    (destroyed ??= (async () => {
      await as(user, 'pg_ctl', ['stop', '-D', dataDir, '-m', 'immediate', '-w']).catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    })());
  return {
    port,
    dataDir,
    url: (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`,
    start: async () => {
      await as(user, 'pg_ctl', ['start', '-D', dataDir, '-l', logFile, '-w', '-t', '60']);
    },
    crash: async () => {
      await as(user, 'pg_ctl', ['stop', '-D', dataDir, '-m', 'immediate', '-w']);
    },
    promote: async () => {
      await as(user, 'pg_ctl', ['promote', '-D', dataDir, '-w', '-t', '60']);
    },
    destroy,
    [Symbol.asyncDispose]: destroy,
  };
}

/** Runs one of PostgreSQL's server programs as the service user. */
async function as(user: ServiceUser, program: string, args: string[]): Promise<string> {
  const bin = postgresBinDir();
  if (bin === null) throw new Error('initdb/pg_ctl not found; set IDEM_TEST_PG_BIN');
  try {
    const { stdout } = await run(join(bin, program), args, {
      uid: user.uid,
      gid: user.gid,
      cwd: tmpdir(),
      timeout: 120_000,
    });
    return stdout;
  } catch (error) {
    const { stderr } = error as { stderr?: string };
    throw new Error(`${program} ${args.join(' ')} failed: ${stderr ?? String(error)}`);
  }
}
