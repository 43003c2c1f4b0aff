import { cookies, headers } from 'next/headers';
import { cache } from 'react';
import { createCaller } from '../server/router';
import { createTRPCContext } from '../server/trpc';

/**
 * Server components call procedures directly, with the same context factory as the route handler
 * and no adapter options: nothing to write headers to, and no batch.
 */
const createContext = cache(async () => {
  const heads = new Headers(await headers());
  heads.set('x-trpc-source', 'rsc');
  void (await cookies()); // the page depends on the session cookie: render it per request
  return createTRPCContext({ headers: heads });
});

export const api = createCaller(createContext);
