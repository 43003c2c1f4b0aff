import { createServer, type Server } from 'node:net';

/**
 * A TCP port where a database would be, that counts the connections made to it and closes each at
 * once. Point a child's PostgreSQL defaults at it (`env`: PGHOST and PGPORT, which postgres.js and
 * pg both read when no URL is given) to prove that it opened no connection: `connections` is 0.
 */
export interface RefusingDatabase extends AsyncDisposable {
  /** PGHOST and PGPORT of this port, and DATABASE_URL unset. */
  env: NodeJS.ProcessEnv;
  /** Connections accepted so far. */
  readonly connections: number;
}

export async function refusingDatabase(): Promise<RefusingDatabase> {
  let connections = 0;
  const server: Server = createServer((socket) => {
    connections += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as { port: number };
  return {
    env: { DATABASE_URL: undefined, PGHOST: '127.0.0.1', PGPORT: String(port) },
    get connections() {
      return connections;
    },
    [Symbol.asyncDispose]: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
