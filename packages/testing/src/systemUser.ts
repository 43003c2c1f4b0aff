import { execFileSync } from 'node:child_process';
import { chownSync } from 'node:fs';
import { createServer } from 'node:net';

/**
 * Who runs PostgreSQL's and PgBouncer's own processes: both refuse to run as root, so a test run
 * as root (CI) runs them as the `postgres` system user; anyone else runs them as themselves.
 */
export interface ServiceUser {
  uid: number | undefined;
  gid: number | undefined;
  /** Gives a folder to that user (a no-op when it is us). */
  own(path: string): void;
}

export function serviceUser(): ServiceUser {
  if (process.getuid?.() !== 0) return { uid: undefined, gid: undefined, own: () => {} };
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  return { uid, gid, own: (path) => chownSync(path, uid, gid) };
}

/** A TCP port on 127.0.0.1 that was free a moment ago. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** Waits until something accepts TCP connections on 127.0.0.1:`port`, or throws after `ms`. */
export async function waitForPort(port: number, ms: number): Promise<void> {
  const { connect } = await import('node:net');
  const deadline = Date.now() + ms;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port });
      socket.once('connect', () => (socket.destroy(), resolve(true)));
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline)
      throw new Error(`nothing listens on 127.0.0.1:${port} after ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
