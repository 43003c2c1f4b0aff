/**
 * A tiny notes API on idem: `notes.add` writes a note through `ctx.idem.tx` (local mode), and
 * `notes.publish` posts a note to a fake feed in an external step (external mode).
 */
import type { IdemMeta } from '@idem/contract';
import { createIdempotency, idemErrorFormatter, type IdemContext } from '@idem/server';
import type { RecoveryStore } from '@idem/contract';
import { initTRPC, TRPCError } from '@trpc/server';
import { sql } from 'drizzle-orm';
import { pgTable, serial, text } from 'drizzle-orm/pg-core';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { z } from 'zod';

export const notes = pgTable('notes', {
  id: serial('id').primaryKey(),
  author: text('author').notNull(),
  body: text('body').notNull(),
});

export const createNotesTable = sql`
  create table notes (id serial primary key, author text not null, body text not null)`;

/** A feed the notes are published to: it keeps every post it received. */
export class FakeFeed {
  readonly received: string[] = [];
  publish(body: string): string {
    this.received.push(body);
    return `post_${this.received.length}`;
  }
}

/** The database's spell of trouble: `notes.add` fails its next attempts with a 503. */
export interface Outage {
  failNext: number;
}

export type NotesContext = IdemContext & { author: string | null };

export function createNotesRouter(options: {
  db: PgDatabase<PgQueryResultHKT>;
  store: RecoveryStore<any>;
  feed: FakeFeed;
  outage: Outage;
}) {
  const t = initTRPC
    .context<NotesContext>()
    .meta<IdemMeta>()
    .create({ isDev: false, errorFormatter: idemErrorFormatter({ onMasked: () => {} }) });
  const authed = t.procedure.use(({ ctx, next }) => {
    if (!ctx.author) throw new TRPCError({ code: 'UNAUTHORIZED' });
    return next({ ctx: { author: ctx.author } });
  });
  const idem = createIdempotency({
    store: options.store,
    keySecret: 'kit-consumer-key-secret-0123456789abcdef',
    scope: (ctx: NotesContext) => ctx.author ?? '',
  });
  const noteInput = z.object({ body: z.string().min(1).max(200) });
  return t.router({
    notes: t.router({
      add: authed
        .input(noteInput)
        .concat(idem.procedure())
        .mutation(async ({ ctx, input }) => {
          if (input.body.startsWith('forbidden')) {
            throw new TRPCError({ code: 'FORBIDDEN', message: 'that note is not allowed' });
          }
          const [note] = await ctx.idem.tx
            .insert(notes)
            .values({ author: ctx.author, body: input.body })
            .returning();
          if (options.outage.failNext > 0) {
            options.outage.failNext -= 1;
            throw new TRPCError({ code: 'SERVICE_UNAVAILABLE', message: 'try again shortly' });
          }
          return note!;
        }),
      publish: authed
        .input(noteInput)
        .concat(idem.procedure({ mode: 'external', leaseMs: 5_000 }))
        .mutation(async ({ ctx, input }) => {
          const post = await ctx.idem.external('post', {
            call: async () => ({ postId: options.feed.publish(input.body) }),
          });
          return { postId: post.postId, author: ctx.author };
        }),
    }),
  });
}
