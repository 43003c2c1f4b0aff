// The procedures sample of docs/trpc-templates.md, verbatim between the markers (a property of
// the router's object), with the declarations it assumes.
import { pgTable, serial, text } from 'drizzle-orm/pg-core';
import { z } from 'zod';
import { createTRPCRouter, idem, protectedProcedure } from './trpc';

const posts = pgTable('posts', {
  id: serial('id').primaryKey(),
  authorId: text('author_id').notNull(),
  title: text('title').notNull(),
});

export const postRouter = createTRPCRouter({
  // ---- verbatim from docs/trpc-templates.md: 8. Procedures ----
  // src/server/router.ts (create-t3-turbo: packages/api/src/router/post.ts)
  create: protectedProcedure
    .input(z.object({ title: z.string().trim().min(1).max(200) }))
    .concat(idem.procedure({ keys: 'optional' }))
    .mutation(async ({ ctx, input }) => {
      const [post] = await ctx.idem.tx
        .insert(posts)
        .values({ authorId: ctx.session.user.id, title: input.title })
        .returning();
      return post!;
    }),
  // ---- end ----
});

export const appRouter = createTRPCRouter({ post: postRouter });
export type AppRouter = typeof appRouter;
