import { createHmac, timingSafeEqual } from 'node:crypto';

/** The signed-in user, as an auth library's session carries it (better-auth, NextAuth). */
export interface Session {
  user: { id: string };
}

/** The cookie the demo session lives in. */
export const SESSION_COOKIE = 'demo_session';

const USER = /^user_[A-Za-z0-9]{1,64}$/;

/**
 * Stands in for the template's auth library: a cookie `demo_session=<user id>.<signature>`,
 * signed with `AUTH_SECRET`. What matters to idem is that the scope comes from the verified
 * session, never from anything the caller may choose.
 */
export function sessionCookie(userId: string, secret: string): string {
  if (!USER.test(userId)) throw new Error(`a user id is user_ and 1 to 64 letters or digits`);
  return `${userId}.${sign(userId, secret)}`;
}

/** The session of a request's `cookie` header, or null. */
export function getSession(headers: Headers, secret: string): Session | null {
  const cookie = headers.get('cookie') ?? '';
  const value = cookie
    .split(/;\s*/)
    .find((part) => part.startsWith(`${SESSION_COOKIE}=`))
    ?.slice(SESSION_COOKIE.length + 1);
  const [userId, signature] = (value ?? '').split('.');
  if (!userId || !signature || !USER.test(userId)) return null;
  const expected = Buffer.from(sign(userId, secret));
  const given = Buffer.from(signature);
  return expected.length === given.length && timingSafeEqual(expected, given)
    ? { user: { id: userId } }
    : null;
}

function sign(userId: string, secret: string): string {
  return createHmac('sha256', secret).update(userId).digest('base64url').slice(0, 22);
}
