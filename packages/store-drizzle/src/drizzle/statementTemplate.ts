import { sql, type Placeholder, type SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';

/**
 * A statement rendered to its text once (per store), with named placeholders for the values of
 * each call: the hot path (a fresh request's read and record) then skips Drizzle's per-call
 * rendering of the SQL tree, which a CPU profile of the hot path measured at about 150 µs per request.
 * The text never changes, so a driver that prepares statements by their text (postgres.js)
 * prepares it once per connection.
 */
export interface StatementTemplate<TName extends string = string> {
  /** For errors and the statement counters only. */
  readonly name: string;
  /** The rendered text and its parameters: `Placeholder`s filled per call, constants kept. */
  readonly query: { sql: string; params: unknown[] };
  /**
   * The statement only reads (a SELECT of no function that writes): on its own it changes
   * nothing a file system sync would carry, so PGlite's runner skips the sync after it.
   */
  readonly readOnly: boolean;
  /** Only to type the values of a call. */
  readonly _values?: Record<TName, unknown>;
}

/** The values of one call of `template`, by placeholder name. */
export type TemplateValues<T> = T extends StatementTemplate<infer N> ? Record<N, unknown> : never;

const dialect = new PgDialect();

/** How a template's statement runs; see {@link StatementTemplate}. */
export interface StatementTemplateOptions {
  /** See `StatementTemplate.readOnly`. Defaults to false: a statement is taken to write. */
  readOnly?: boolean;
}

/**
 * Renders `build(p)` once; `p.name` is the placeholder of the value named `name`. Every value
 * must go through a placeholder (or be a constant of the statement): nothing of a call is spliced.
 */
export function statementTemplate<TName extends string>(
  name: string,
  names: readonly TName[],
  build: (p: Record<TName, Placeholder<TName>>) => SQL,
  options: StatementTemplateOptions = {},
): StatementTemplate<TName> {
  const placeholders = Object.fromEntries(names.map((n) => [n, sql.placeholder(n)])) as Record<
    TName,
    Placeholder<TName>
  >;
  return {
    name,
    query: dialect.sqlToQuery(build(placeholders)),
    readOnly: options.readOnly === true,
  };
}
