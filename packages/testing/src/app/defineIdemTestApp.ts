import type { IncomingMessage, ServerResponse } from 'node:http';
import type { IdemContext, IdemRequestInfo } from '@idem/server';
import type { AnyTRPCRouter, inferRouterContext } from '@trpc/server';
import type { IdemTestDb, IdemTestStore } from './IdemTestDatabase.js';

/** What your factory gets for one server of a run (configured once per server). */
export interface IdemTestAppParts {
  /** This server's database: its own postgres.js pool on PostgreSQL, the shared one on PGlite. */
  db: IdemTestDb;
  /** The key store on {@link db}: give it to `createIdempotency({ store })`. */
  store: IdemTestStore;
  /** Which server of the run this is: 0, 1, ... */
  server: number;
  /** Milliseconds this server's store clock runs ahead of the database's (0 but in clock gates). */
  clockShiftMs: number;
}

/**
 * What your `createContext` gets (per request): the standalone adapter's `{ req, res, info }`
 * and the caller the kit sends the request as. Build your context for that caller; the kit adds
 * idem's request context (`idemContext({ req, res, info })`) itself.
 */
export interface IdemTestContextOptions {
  /** The caller named by the gate or the request, e.g. `'alice'`; null when none is sent. */
  caller: string | null;
  req: IncomingMessage;
  res: ServerResponse;
  /** tRPC's request info (`isBatchCall`, `calls`), as idem's `idemContext` reads it. */
  info: IdemRequestInfo;
}

/** Your context without idem's part, which the kit adds (it may also be given: yours wins). */
export type IdemTestContext<TRouter extends AnyTRPCRouter> = Omit<
  inferRouterContext<TRouter>,
  keyof IdemContext
> &
  Partial<IdemContext>;

/** What your factory returns for one server. */
export interface IdemTestAppInstance<TRouter extends AnyTRPCRouter> {
  /** Your router, built on the given store (`createIdempotency({ store, ... })`). */
  router: TRouter;
  /** Your context for a caller (per request). */
  createContext(
    options: IdemTestContextOptions,
  ): IdemTestContext<TRouter> | Promise<IdemTestContext<TRouter>>;
  /** Called when the server closes (workers to stop, pools of your own to end). Defaults to none. */
  close?(): void | Promise<void>;
}

/** Builds your app for one server. Called once per server of a run. */
export type IdemTestAppFactory<TRouter extends AnyTRPCRouter> = (
  parts: IdemTestAppParts,
) => IdemTestAppInstance<TRouter> | Promise<IdemTestAppInstance<TRouter>>;

/** Your app as the kit runs it. Every field but `create` is optional. */
export interface IdemTestAppDefinition<TRouter extends AnyTRPCRouter> {
  /** Builds your app for one server (see {@link IdemTestAppFactory}). */
  create: IdemTestAppFactory<TRouter>;
  /**
   * Creates your own tables once per run, after idem's migrations: `db.execute(sql\`create table
   * ...\`)`, or your migrations with the migrator of the driver `kind` names (`drizzle-orm/pglite/
   * migrator` for `pglite`, `drizzle-orm/postgres-js/migrator` for `postgres`). Defaults to none.
   */
  setup?(db: IdemTestDb, database: { kind: 'pglite' | 'postgres' }): void | Promise<void>;
  /**
   * Headers that authenticate a caller, when your `createContext` reads the request rather than
   * `caller` (e.g. `(caller) => ({ authorization: \`Bearer ${tokenFor(caller)}\` })`). Defaults to
   * none: the caller travels in the kit's own header and reaches `createContext` as `caller`.
   */
  callerHeaders?(caller: string): Record<string, string>;
  /**
   * Your router's transformer, when it has one (superjson): inputs are sent as
   * `transformer.serialize(input)`. Defaults to none (plain JSON, tRPC's default).
   */
  transformer?: { serialize(value: unknown): unknown };
}

/** An app definition, checked: give it to `startIdemTestApp` or straight to a gate. */
export interface IdemTestApp<TRouter extends AnyTRPCRouter> {
  readonly definition: Readonly<IdemTestAppDefinition<TRouter>>;
}

/** The router of an app made with {@link defineIdemTestApp}. */
export type IdemTestAppRouter<TApp> = TApp extends IdemTestApp<infer TRouter> ? TRouter : never;

/**
 * Defines your app for the kit: a factory that builds your router and context on the database
 * and store the kit gives it, and optionally your tables' setup. Nothing starts here.
 *
 * @example
 * const app = defineIdemTestApp({
 *   setup: (db) => migrate(db, { migrationsFolder: './migrations' }),
 *   create: ({ db, store }) => ({
 *     router: createAppRouter({ db, store }),
 *     createContext: ({ caller }) => ({ accountId: caller }),
 *   }),
 * });
 */
export function defineIdemTestApp<TRouter extends AnyTRPCRouter>(
  definition: IdemTestAppFactory<TRouter> | IdemTestAppDefinition<TRouter>,
): IdemTestApp<TRouter> {
  const checked = typeof definition === 'function' ? { create: definition } : { ...definition };
  if (typeof checked.create !== 'function') {
    throw new TypeError(
      '@idem/testing: defineIdemTestApp needs a factory, ({ db, store }) => ({ router, createContext }), or { create: factory, setup }',
    );
  }
  return { definition: Object.freeze(checked) };
}
