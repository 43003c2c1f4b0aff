// The error formatter and createIdempotency samples of docs/trpc-templates.md, verbatim between
// the markers, with the declarations they assume.
import type { IdemMeta } from '@idem/contract';
import { createIdempotency, idemErrorFormatter } from '@idem/server';
import { initTRPC, TRPCError } from '@trpc/server';
import superjson from 'superjson';
import { z, ZodError } from 'zod';
import type { Context, Session } from './context';
import { store } from './db';

declare function env(): { IDEM_KEY_SECRET: string };

// ---- verbatim from docs/trpc-templates.md: 6. Error formatter ----
// src/server/trpc.ts
const idemFormat = idemErrorFormatter();

const t = initTRPC
  .context<Context>()
  .meta<IdemMeta>()
  .create({
    transformer: superjson,
    errorFormatter: (opts) => {
      const shape = idemFormat(opts);
      const zodError =
        opts.error.cause instanceof ZodError ? z.flattenError(opts.error.cause) : null;
      return { ...shape, data: { ...shape.data, zodError } };
    },
  });
// ---- end ----

export const createTRPCRouter = t.router;

// ---- verbatim from docs/trpc-templates.md: 7. createIdempotency ----
// src/server/trpc.ts
export const protectedProcedure = t.procedure.use(({ ctx, next }) => {
  if (!ctx.session?.user) throw new TRPCError({ code: 'UNAUTHORIZED' });
  return next({ ctx: { session: { ...ctx.session, user: ctx.session.user } } });
});

/** The context after `protectedProcedure`: what idem's `scope` sees. */
export type ProtectedContext = Context & { session: Session };

export const idem = createIdempotency({
  store,
  scope: (ctx: ProtectedContext) => ctx.session.user.id,
  keySecret: env().IDEM_KEY_SECRET,
  serializer: { serialize: superjson.stringify, deserialize: superjson.parse },
});
// ---- end ----
