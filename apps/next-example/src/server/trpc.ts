import type { IdemMeta } from '@idem/contract';
import {
  createIdempotency,
  idemContext,
  idemErrorFormatter,
  type IdemAdapterOptions,
} from '@idem/server';
import { initTRPC, TRPCError } from '@trpc/server';
import superjson from 'superjson';
import { z, ZodError } from 'zod';
import { env } from '../env';
import { getSession, type Session } from './auth';
import { db, store } from './db';

/**
 * The shared context factory, in the templates' shape: the route handler, server components and
 * local calls all build their context here. `idem` is the fetch adapter's `createContext`
 * options: given them, idem reads the request's headers, writes its response headers itself and
 * refuses a batch that holds a keyed mutation. Server components and local calls have none: the
 * request's headers are read instead.
 */
export async function createTRPCContext(opts: { headers: Headers; idem?: IdemAdapterOptions }) {
  const session = getSession(opts.headers, env().AUTH_SECRET);
  return { ...idemContext(opts.idem ?? opts.headers), session, db };
}

export type Context = Awaited<ReturnType<typeof createTRPCContext>>;

/** Masks 5xx messages (the detail goes to the server log) and adds `data.idem` to idem's errors. */
const idemFormat = idemErrorFormatter();

const t = initTRPC
  .context<Context>()
  .meta<IdemMeta>()
  .create({
    transformer: superjson,
    // The template's own formatter, run on the shape idem's formatter returns.
    errorFormatter: (opts) => {
      const shape = idemFormat(opts);
      const zodError =
        opts.error.cause instanceof ZodError ? z.flattenError(opts.error.cause) : null;
      return { ...shape, data: { ...shape.data, zodError } };
    },
  });

export const createCallerFactory = t.createCallerFactory;
export const createTRPCRouter = t.router;
export const publicProcedure = t.procedure;

export const protectedProcedure = t.procedure.use(({ ctx, next }) => {
  if (!ctx.session?.user) throw new TRPCError({ code: 'UNAUTHORIZED' });
  return next({ ctx: { session: { ...ctx.session, user: ctx.session.user } } });
});

/** The context after `protectedProcedure`: what idem's `scope` sees. */
export type ProtectedContext = Context & { session: Session };

export const idem = createIdempotency({
  store,
  // Annotated: unannotated, `ctx` is only idem's part of the context and `session` is unknown.
  scope: (ctx: ProtectedContext) => ctx.session.user.id,
  keySecret: env().IDEM_KEY_SECRET,
  // The router's transformer is superjson: store outputs with it, so a replay carries the same
  // `Date` (Map, Set, BigInt) as the first answer instead of its JSON string.
  serializer: { serialize: superjson.stringify, deserialize: superjson.parse },
});
