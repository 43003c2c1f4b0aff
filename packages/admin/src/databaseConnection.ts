import postgres from 'postgres';
import { AdminInputError } from './AdminInputError.js';

/*
 * idem-admin's connection to DATABASE_URL: opened only once the command line is known to be
 * right, bounded by a connect timeout so an unreachable server is an answer and not a hang, and
 * described by host and port alone: the URL holds the password, so no message ever quotes it.
 */

/** Seconds a connection attempt may take, unless DATABASE_URL or PGCONNECT_TIMEOUT says. */
export const CONNECT_TIMEOUT_S = 5;

/** A client for DATABASE_URL (nothing is opened until the first query), and where it points. */
export interface Database {
  client: postgres.Sql;
  /** `host:port` (or the socket path), for messages: never the URL itself. */
  where: string;
  /** The connect timeout in effect, in seconds. */
  connectTimeoutS: number;
}

/**
 * The client for `env.DATABASE_URL`. Throws an {@link AdminInputError} (a usage error) when it is
 * not set or is no postgres:// URL. Opens no connection.
 */
export function openDatabase(env: NodeJS.ProcessEnv = process.env): Database {
  const url = env.DATABASE_URL;
  if (!url) {
    throw new AdminInputError(
      'DATABASE_URL is not set: the record commands need the database, e.g. DATABASE_URL=postgres://user:password@host:5432/database',
    );
  }
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url)?.[1];
  if (scheme !== 'postgres' && scheme !== 'postgresql') {
    throw new AdminInputError(
      `DATABASE_URL must be a postgres:// URL such as postgres://user:password@host:5432/database, got ${scheme ? `a ${scheme}:// URL` : 'no URL'}`,
    );
  }
  const timeoutGiven = /[?&]connect_timeout=/.test(url) || env.PGCONNECT_TIMEOUT !== undefined;
  let client: postgres.Sql;
  try {
    client = postgres(url, {
      max: 2,
      onnotice: () => {},
      ...(timeoutGiven ? {} : { connect_timeout: CONNECT_TIMEOUT_S }),
    });
  } catch {
    // The parser's message may quote the URL, password included.
    throw new AdminInputError(
      'DATABASE_URL is not a URL PostgreSQL clients read: check it (a password with @, / or : is percent-encoded)',
    );
  }
  const { host, port, path, connect_timeout } = client.options as typeof client.options & {
    path?: string | false;
  };
  const where = path || host.map((h, i) => `${h}:${port[i] ?? 5432}`).join(',');
  return { client, where, connectTimeoutS: Number(connect_timeout) };
}

/** What a connection error's code means, said plainly. */
const NETWORK_CODES: Record<string, string> = {
  ECONNREFUSED: 'connection refused (is PostgreSQL listening there?)',
  ENOTFOUND: 'the host name does not resolve',
  EAI_AGAIN: 'the host name could not be resolved (no answer from DNS)',
  EHOSTUNREACH: 'no route to the host',
  ENETUNREACH: 'the network is unreachable',
  ETIMEDOUT: 'the connection timed out',
  ECONNRESET: 'the server reset the connection',
  CONNECTION_CLOSED: 'the server closed the connection',
  CONNECTION_ENDED: 'the connection was ended',
  CONNECTION_DESTROYED: 'the connection was destroyed',
};

/**
 * SQLSTATEs that mean the server would not let us in or in no longer: connection exceptions
 * (class 08), a refused login (class 28), an unknown database, too many connections, a shutdown
 * or a server starting up.
 */
const refusedLogin = (code: string) =>
  code.startsWith('08') ||
  code.startsWith('28') ||
  ['3D000', '53300', '57P01', '57P02', '57P03'].includes(code);

/** `error` and its causes (a query error of Drizzle wraps the driver's). */
function* causes(error: unknown): Generator<Error> {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) yield e;
}

/**
 * The one line for a failure to reach or enter the database, or undefined when `error` is
 * none. `anyFailure`: the first query's failure, whatever it is, is the connection's (a TLS
 * refusal, say), so it is described as one.
 */
export function describeConnectionFailure(
  error: unknown,
  database: Database,
  anyFailure = false,
): string | undefined {
  const at = `the database at ${database.where} (DATABASE_URL)`;
  for (const e of causes(error)) {
    const code = (e as { code?: unknown }).code;
    if (code === 'CONNECT_TIMEOUT') {
      return `cannot reach ${at}: no answer within ${database.connectTimeoutS} s (raise it with ?connect_timeout=N in DATABASE_URL)`;
    }
    if (typeof code === 'string' && Object.hasOwn(NETWORK_CODES, code)) {
      return `cannot reach ${at}: ${NETWORK_CODES[code]}`;
    }
    if (e.name === 'PostgresError' && typeof code === 'string' && refusedLogin(code)) {
      return `${at} refused the connection: ${firstLine(e.message)} (SQLSTATE ${code})`;
    }
  }
  if (!anyFailure) return undefined;
  const root = [...causes(error)].at(-1);
  return `cannot connect to ${at}: ${root ? firstLine(root.message) : String(error)}`;
}

/** The first line of a message: a failure is reported in one line. */
export function firstLine(message: string): string {
  return message.split(/\r?\n/, 1)[0]!.trim();
}
