import {
  messages,
  parse,
  protocol,
  type PGlite,
  type QueryOptions,
  type Results,
} from '@electric-sql/pglite';
import { DrizzleQueryError, fillPlaceholders, type Logger } from 'drizzle-orm';
import {
  drizzleRunner,
  type DrizzleRunner,
  type StatementRunnerFactory,
} from '../drizzle/executeRows.js';
import { hasSqlState } from '../drizzle/hasSqlState.js';
import type { StatementTemplate } from '../drizzle/statementTemplate.js';

/** Options of {@link pglitePreparedRunner}: the prepared-statement part of `PgliteStoreOptions`. */
export interface PglitePreparedRunnerOptions {
  /** See `PgliteStoreOptions.preparedStatements`. Defaults to true. */
  preparedStatements?: boolean;
}

/** SQLSTATE 26000 `invalid_sql_statement_name`: a prepared statement this session lacks. */
const INVALID_SQL_STATEMENT_NAME = '26000';

/**
 * Whether `error` says the prepared statement can no longer serve: missing (26000), or its
 * result's columns changed under it (0A000 "cached plan must not change result type", after an
 * ALTER of a table it reads). Either way nothing ran; a new Parse fixes it.
 */
function isStale(error: unknown): boolean {
  if (hasSqlState(error, INVALID_SQL_STATEMENT_NAME)) return true;
  return (
    hasSqlState(error, '0A000') &&
    error instanceof Error &&
    /cached plan must not change result type/.test(error.message)
  );
}

/**
 * A template's statement as this PGlite session holds it: its name, its parameters' types, and
 * the description of its result (PostgreSQL's RowDescription, none for a statement without
 * rows), read once when it is prepared instead of on every call.
 */
interface Prepared {
  readonly name: string;
  readonly paramTypes: readonly number[];
  readonly result: readonly messages.BackendMessage[];
}

/**
 * The parts of a PGlite instance the prepared path uses. `_runExclusiveTransaction` and
 * `_runExclusiveQuery` are the two mutexes PGlite's own `query` takes (see `runOutside`):
 * declared on `BasePGlite`, but underscored, so a client without them runs unprepared.
 */
type PgliteClient = Pick<
  PGlite,
  | 'execProtocol'
  | 'runExclusive'
  | '_runExclusiveQuery'
  | '_runExclusiveTransaction'
  | '_checkReady'
  | 'parsers'
  | 'serializers'
>;

function isPgliteClient(client: unknown): client is PgliteClient {
  const c = client as Partial<Record<keyof PgliteClient, unknown>> | null | undefined;
  return (
    typeof c?.execProtocol === 'function' &&
    typeof c.runExclusive === 'function' &&
    typeof c._runExclusiveQuery === 'function' &&
    typeof c._runExclusiveTransaction === 'function' &&
    typeof c._checkReady === 'function' &&
    typeof c.parsers === 'object' &&
    typeof c.serializers === 'object'
  );
}

/**
 * The statements each PGlite instance (one PostgreSQL session) holds, by text; shared by every
 * store on the instance, whose names are derived from the text (see {@link statementName}).
 */
const sessions = new WeakMap<object, Map<string, Prepared>>();

/** A name for `text` (53-bit hash, cyrb53): the same text gets the same name in any store. */
function statementName(text: string): string {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return `idem_${(4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(36)}`;
}

/** One frontend message buffer of `parts`, sent to PGlite in one call. */
function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, part) => n + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** What of Drizzle's PGlite session the prepared path reads: its logger and its result config. */
interface PgliteSessionParts {
  logger?: Logger;
  client?: { closed?: unknown };
  prepareQuery(
    query: { sql: string; params: unknown[] },
    fields: undefined,
    name: undefined,
    isResponseInArrayMode: boolean,
  ): { rawQueryConfig?: unknown };
}

function sessionOf(runner: unknown): PgliteSessionParts | undefined {
  const session = (runner as { _?: { session?: Partial<PgliteSessionParts> } })._?.session;
  return typeof session?.prepareQuery === 'function' ? (session as PgliteSessionParts) : undefined;
}

/**
 * The options Drizzle's PGlite session passes to `pglite.query` for a raw statement
 * (`rawQueryConfig`: rows as objects, timestamps, intervals and dates kept as the strings
 * PostgreSQL sent): taken from Drizzle itself, so the prepared path's rows are the same as the
 * unprepared path's.
 */
function rawQueryConfigOf(db: unknown): QueryOptions | undefined {
  const config = sessionOf(db)?.prepareQuery({ sql: '', params: [] }, undefined, undefined, false)
    .rawQueryConfig as QueryOptions | undefined;
  return config?.rowMode === 'object' && typeof config.parsers === 'object' ? config : undefined;
}

/**
 * The PGlite statement runner of the store: the templates (`run`) run as named prepared
 * statements, parsed and planned once per PGlite instance, then only bound and executed; every
 * other statement (`execute`) goes through Drizzle as before. PGlite's own `query` sends Parse,
 * Describe, Bind, Describe, Execute and Sync for every statement, and PostgreSQL plans each one
 * again; here a call is one Bind, Execute, Sync, in one message, and its rows are read with the
 * description PostgreSQL gave when the statement was prepared.
 *
 * How it shares PGlite's one session (PGlite 0.5, `BasePGlite`):
 * - `pglite.query` takes the transaction mutex, then the query mutex; `pglite.transaction(fn)`
 *   holds the transaction mutex from its BEGIN to its COMMIT, and the `tx.query` of its callback
 *   takes the query mutex alone. A statement outside a transaction here takes both, the same way
 *   (`_runExclusiveTransaction`, `_runExclusiveQuery`): it waits for any open transaction to end
 *   and never runs inside it.
 * - A statement in a transaction (`tx`, Drizzle's wrapper of PGlite's `Transaction`) takes the
 *   query mutex alone (`pglite.runExclusive`): the transaction mutex is held by that
 *   transaction, whose callback is running this statement; taking it again would wait for the
 *   transaction to end, forever.
 *
 * A prepared statement survives ROLLBACK (PostgreSQL's prepared statements are not
 * transactional), so preparing inside a transaction is safe; a Parse that fails (an aborted
 * transaction) records nothing. A statement missing when bound (SQLSTATE 26000: the application
 * ran `DEALLOCATE ALL` or `DISCARD ALL`), or refused because a table's change altered its result
 * columns (0A000), is forgotten and prepared again: at once outside a transaction (nothing ran),
 * at its next use inside one (PostgreSQL has aborted the transaction; the statement fails like
 * any other).
 *
 * Drizzle's logger sees every statement as before (`logQuery(text, params)`); errors are thrown
 * as Drizzle throws them: a `DrizzleQueryError` whose `cause` is PGlite's `DatabaseError`, with
 * `code`, `constraint` and the other fields, and the `query` and `params` PGlite adds.
 */
export function pglitePreparedRunner(
  db: unknown,
  options: PglitePreparedRunnerOptions = {},
): StatementRunnerFactory {
  if (options.preparedStatements === false) return drizzleRunner;
  const client = (db as { $client?: unknown }).$client;
  const config = rawQueryConfigOf(db);
  // Not an in-process PGlite (or a Drizzle whose session differs): Drizzle's path, unprepared.
  if (!isPgliteClient(client) || config === undefined) return drizzleRunner;
  let statements = sessions.get(client);
  if (statements === undefined) {
    statements = new Map();
    sessions.set(client, statements);
  }
  const held = statements;
  // The parsers `pglite.query(text, params, config)` uses: PGlite's own, Drizzle's over them.
  // PGlite merges the two maps on every call (a copy of several hundred entries, about 90 µs
  // for a row of the read's 30 columns); here the merge is a prototype chain built once, which
  // still sees parsers PGlite adds later (`refreshArrayTypes`).
  const parsers = Object.assign(Object.create(client.parsers) as PGlite['parsers'], config.parsers);
  // The result options without their parsers (the prototype chain above carries them).
  const { parsers: _parsers, ...resultOptions }: QueryOptions = config;

  /** Parses `text` under its name (closing any statement of that name first) and describes it. */
  const prepare = async (text: string): Promise<Prepared> => {
    const name = statementName(text);
    const { messages: answer } = await client.execProtocol(
      concat([
        protocol.serialize.close({ type: 'S', name }),
        protocol.serialize.parse({ name, text }),
        protocol.serialize.describe({ type: 'S', name }),
        protocol.serialize.sync(),
      ]),
      { syncToFs: false },
    );
    const prepared = {
      name,
      paramTypes: parse.parseDescribeStatementResults(answer),
      result: answer.filter((message) => message.name === 'rowDescription'),
    };
    held.set(text, prepared);
    return prepared;
  };

  /**
   * Binds and executes `prepared` with `params`, serialised as `pglite.query` does. No Describe:
   * the RowDescription read at Parse stands in front of the rows (a Describe per call costs
   * PGlite about as much as running the read itself). `syncToFs` as `pglite.query` passes it:
   * after a statement outside a transaction (the transaction's own COMMIT syncs it), except a
   * read (`StatementTemplate.readOnly`): it has nothing of its own to sync, every write before it
   * synced when it ran, and the sync costs about 9 µs even on the in-memory file system.
   */
  const execute = async (
    prepared: Prepared,
    params: unknown[],
    syncToFs: boolean,
  ): Promise<Results> => {
    const values = params.map((value, i) => {
      if (value === null || value === undefined) return null;
      const serializer = client.serializers[prepared.paramTypes[i]!];
      return serializer ? serializer(value) : String(value);
    });
    const { messages: answer } = await client.execProtocol(
      concat([
        protocol.serialize.bind({ statement: prepared.name, values }),
        protocol.serialize.execute({}),
        protocol.serialize.sync(),
      ]),
      { syncToFs },
    );
    return parse.parseResults([...prepared.result, ...answer], parsers, resultOptions)[0]!;
  };

  /**
   * Runs `template` prepared, holding the session (the caller took the mutexes). A statement found
   * missing is forgotten; outside a transaction it is prepared and run again at once.
   */
  const runHeld = async (
    template: StatementTemplate,
    params: unknown[],
    inTransaction: boolean,
  ) => {
    const text = template.query.sql;
    const syncToFs = !inTransaction && !template.readOnly;
    const known = held.get(text);
    const prepared = known ?? (await prepare(text));
    try {
      return await execute(prepared, params, syncToFs);
    } catch (error) {
      if (!isStale(error)) throw error;
      if (held.get(text) === prepared) held.delete(text);
      // Inside a transaction the failed Bind has aborted it: the statement fails.
      if (inTransaction || known === undefined) throw error;
      return await execute(await prepare(text), params, syncToFs);
    }
  };

  const runOutside = async (template: StatementTemplate, params: unknown[]) => {
    await client._checkReady();
    return client._runExclusiveTransaction(() =>
      client._runExclusiveQuery(() => runHeld(template, params, false)),
    );
  };

  const runInside =
    (transaction: { closed?: unknown } | undefined) =>
    (template: StatementTemplate, params: unknown[]) =>
      client.runExclusive(() => {
        // As PGlite's `tx.query`: a closed transaction's statement would run outside it.
        if (transaction?.closed === true) throw new Error('Transaction is closed');
        return runHeld(template, params, true);
      });

  return (runner: DrizzleRunner, inTransaction: boolean) => {
    const session = sessionOf(runner);
    const logger = session?.logger;
    const runStatement = inTransaction ? runInside(session?.client) : runOutside;
    const run = async (template: StatementTemplate, values: Record<string, unknown>) => {
      const { sql: text, params: templateParams } = template.query;
      const params = fillPlaceholders(templateParams, values);
      logger?.logQuery(text, params);
      try {
        return await runStatement(template, params);
      } catch (error) {
        if (error instanceof messages.DatabaseError) {
          // What PGlite's `query` adds to its errors.
          Object.assign(error, { query: text, params, queryOptions: config });
        }
        throw new DrizzleQueryError(text, params, error as Error);
      }
    };
    return { execute: drizzleRunner(runner, inTransaction).execute, run };
  };
}
