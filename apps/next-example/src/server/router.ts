import { desc, eq } from 'drizzle-orm';
import { z } from 'zod';
import { posts } from './schema';
import {
  createCallerFactory,
  createTRPCRouter,
  idem,
  protectedProcedure,
  publicProcedure,
} from './trpc';

const postRouter = createTRPCRouter({
  /** The signed-in user's posts, newest first. */
  mine: publicProcedure.query(({ ctx }) =>
    ctx.session
      ? ctx.db
          .select()
          .from(posts)
          .where(eq(posts.authorId, ctx.session.user.id))
          .orderBy(desc(posts.id))
      : [],
  ),
  create: protectedProcedure
    .input(z.object({ title: z.string().trim().min(1).max(200) }))
    // Rolling out: callers without idem's link (no key) still run, unprotected, marked with
    // `Idempotency-Protected: false`. Remove `keys` once every client sends a key.
    .concat(idem.procedure({ keys: 'optional' }))
    .mutation(async ({ ctx, input }) => {
      // The post commits in one transaction with the key and the stored result.
      const [post] = await ctx.idem.tx
        .insert(posts)
        .values({ authorId: ctx.session.user.id, title: input.title })
        .returning();
      return post!;
    }),
});

export const appRouter = createTRPCRouter({ post: postRouter });
export type AppRouter = typeof appRouter;
export const createCaller = createCallerFactory(appRouter);
