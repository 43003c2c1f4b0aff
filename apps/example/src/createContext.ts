import type { IncomingMessage } from 'node:http';
import { idemContext, type IdemContext } from '@idem/server';
import type { RequestOrigin } from './Faults.js';

/** The tRPC context of the example (per request). */
export type AppContext = IdemContext & {
  /** The authenticated account, or null (then every procedure answers 401). */
  accountId: string | null;
  origin: RequestOrigin;
};

/** Demo authentication: the bearer token is the account id, `acct_` and letters or digits. */
const BEARER = /^Bearer (acct_[A-Za-z0-9]{1,64})$/;

/** Reads the account from an `Authorization` header value; null when it is not a demo token. */
export function accountFromAuthorization(value: string | string[] | undefined): string | null {
  return typeof value === 'string' ? (BEARER.exec(value)?.[1] ?? null) : null;
}

/** The standalone adapter's `createContext`: idem's request headers plus the caller. */
export function createContext({ req }: { req: IncomingMessage }): AppContext {
  return {
    // The request itself, not its headers: two Idempotency-Key headers stay two (and get a 400).
    ...idemContext(req),
    accountId: accountFromAuthorization(req.headers.authorization),
    origin: 'http',
  };
}
