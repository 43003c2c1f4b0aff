// The context sample of docs/trpc-templates.md, verbatim between the markers, with the
// declarations it assumes.
import { idemContext, type IdemAdapterOptions } from '@idem/server';
import { db } from './db';

export interface Session {
  user: { id: string };
}
declare function env(): { AUTH_SECRET: string };
declare function getSession(headers: Headers, secret: string): Session | null;

// ---- verbatim from docs/trpc-templates.md: 5. Context: the adapter parameter ----
// src/server/trpc.ts (create-t3-turbo: packages/api/src/trpc.ts; create-t3-app: src/server/api/trpc.ts)
export async function createTRPCContext(opts: { headers: Headers; idem?: IdemAdapterOptions }) {
  const session = getSession(opts.headers, env().AUTH_SECRET); // the template's `auth.api.getSession`
  return { ...idemContext(opts.idem ?? opts.headers), session, db };
}
// ---- end ----

export type Context = Awaited<ReturnType<typeof createTRPCContext>>;
