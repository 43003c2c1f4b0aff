import { pgTable, serial, text, timestamp } from 'drizzle-orm/pg-core';

/** The app's one table (migrations/0000_posts.sql). */
export const posts = pgTable('posts', {
  id: serial('id').primaryKey(),
  authorId: text('author_id').notNull(),
  title: text('title').notNull(),
  createdAt: timestamp('created_at', { withTimezone: true }).defaultNow().notNull(),
});
