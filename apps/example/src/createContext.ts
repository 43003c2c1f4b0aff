import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { idemContext, type IdemContext, type IdemRequestInfo } from '@idem/server';
import { TRPCError } from '@trpc/server';
import type { RequestOrigin } from './Faults.js';

/** The tRPC context of the example (per request). */
export type AppContext = IdemContext & {
  /** The authenticated account, or null (then every procedure answers 401). */
  accountId: string | null;
  origin: RequestOrigin;
};

/**
 * The secret the example signs its demo tokens with when `IDEM_EXAMPLE_TOKEN_SECRET` is unset.
 * Public (it is in this file): set your own secret before the example is reachable by anyone else.
 */
export const DEFAULT_TOKEN_SECRET = 'idem-example-demo-secret';

/**
 * Demo authentication. A token names its account and is signed with the server's secret:
 * `acct_alice1.<22 characters of HMAC-SHA256>`. The account id alone is not a credential, so the
 * scope that idem stores and logs (the account id) never lets anyone call as that account.
 * A real app looks its sessions up instead; what matters to idem is that the scope is derived
 * from the credential, never equal to it.
 */
export function tokenFor(accountId: string, secret: string = DEFAULT_TOKEN_SECRET): string {
  if (!ACCOUNT.test(accountId)) {
    throw new Error(`an account id is acct_ and 1 to 64 letters or digits; got ${accountId}`);
  }
  return `${accountId}.${signature(accountId, secret)}`;
}

const ACCOUNT = /^acct_[A-Za-z0-9]{1,64}$/;
const BEARER = /^Bearer (acct_[A-Za-z0-9]{1,64})\.([A-Za-z0-9_-]{22})$/;

function signature(accountId: string, secret: string): string {
  return createHmac('sha256', secret).update(accountId).digest('base64url').slice(0, 22);
}

/** Reads the account from an `Authorization` header value; null when it is not a valid token. */
export function accountFromAuthorization(
  value: string | string[] | undefined,
  secret: string = DEFAULT_TOKEN_SECRET,
): string | null {
  const match = typeof value === 'string' ? BEARER.exec(value) : null;
  if (!match) return null;
  const expected = Buffer.from(signature(match[1]!, secret));
  const given = Buffer.from(match[2]!);
  return timingSafeEqual(expected, given) ? match[1]! : null;
}

/**
 * The standalone adapter's `createContext` (configured once per process): idem's request headers
 * plus the caller. Two `Authorization` headers are refused with 400, as two `Idempotency-Key`
 * headers are: which one would count is a guess, and a proxy may have picked the other.
 */
export function appContext(tokenSecret: string) {
  return ({ req, info }: { req: IncomingMessage; info: IdemRequestInfo }): AppContext => {
    const authorization = req.headersDistinct.authorization ?? [];
    if (authorization.length > 1) {
      throw new TRPCError({
        code: 'BAD_REQUEST',
        message: 'send one Authorization header, not several',
      });
    }
    return {
      // The request itself, not its headers: two Idempotency-Key headers stay two (and get a
      // 400). And tRPC's info: a batch holding a keyed mutation is refused before anything runs.
      ...idemContext(req, info),
      accountId: accountFromAuthorization(authorization[0], tokenSecret),
      origin: 'http',
    };
  };
}
