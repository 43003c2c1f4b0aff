import type { Meter } from '@opentelemetry/api';
import {
  idempotencyOptionsSchema,
  type IdempotencyOptions,
  type RecoveryStore,
} from '@idem/contract';
import type { IdemContext } from './request/idemContext.js';
import type {
  ExternalIdemExecution,
  IdemExecution,
  LocalIdemExecution,
} from './request/IdemExecution.js';
import { createIdemRuntime } from './request/createIdemRuntime.js';
import { composeScope, runRequest } from './request/prepareJob.js';
import { resolveProcedureOptions } from './request/resolveProcedureOptions.js';
import { findMisplacedIdempotency } from './trpc/auditRouter.js';
import {
  buildPlugin,
  buildProcedure,
  type IdemProcedureBuilder,
} from './trpc/idemProcedureBuilder.js';
import type { IdemServerEvent } from './telemetry/IdemServerEvent.js';
import type { ResultSerializer } from './replay/ResultSerializer.js';
import type { ReplayStrategy } from './replay/ReplayStrategy.js';
import {
  createCompleter,
  type Completer,
  type CompleterOptions,
} from './workers/createCompleter.js';
import { createOperationTools, type OperationTools } from './operations/operationTools.js';
import type { TextCipher } from './replay/aesGcmCipher.js';
import {
  keepStatusLocation,
  type AcceptedOperation,
  type StatusLocation,
} from './replay/acceptedResponse.js';
import { checkedKeySecrets } from './request/keyHash.js';
import { operationStatusQuery } from './operations/operationStatusProcedure.js';
import {
  createWorkerPool,
  type QueueOptions,
  type WorkerPool,
  type WorkerPoolOptions,
} from './workers/workerPool.js';

export type { IdemProcedureBuilder } from './trpc/idemProcedureBuilder.js';

/** Options of {@link createIdempotency} (configured once per app). */
export interface CreateIdempotencyOptions<TContext extends IdemContext, TTx> {
  /**
   * The key store, e.g. `createPostgresJsStore(db)` from `@idem/store-drizzle/postgres-js`: the
   * contract's {@link RecoveryStore} (claims and outcomes, and the recovery the external mode,
   * the completer and the operation tools need), checked by type, never probed at run time.
   */
  store: RecoveryStore<TTx>;
  /**
   * Required. The caller's scope, from the authenticated context: e.g. `${accountId}:live`. Keys
   * are unique per (scope, procedure, key); there is no global default, and an empty scope is
   * refused. Put idem after your authentication middleware.
   */
  scope: (ctx: TContext) => string | Promise<string>;
  /**
   * Required. The server secret idempotency keys are hashed with (HMAC-SHA256 of the scope and the
   * key), at least 32 characters: e.g. `openssl rand -hex 32`, kept in your config. The table and
   * the logs keep only this hash: the same key in two scopes hashes apart, and a key guessed from
   * a business id cannot be confirmed without the secret. There is no default: a missing or
   * short secret is a start-up error, never a plain hash. Changing it turns every live key into a
   * new request, unless the old secret is listed in `previousKeySecrets`.
   */
  keySecret: string;
  /**
   * Secrets `keySecret` replaced, newest first, for a rotation: a request whose key has a live
   * record under one of them keeps that record (one extra read per listed secret per request).
   * Drop them once the replay window has passed since the switch. Defaults to none.
   */
  previousKeySecrets?: readonly string[];
  /**
   * Queues long-running work (`respond: 'accepted'`): a request is stored PENDING and answered
   * 202, and `idem.workerPool()` runs it with a concurrency limit. Defaults to none: accepted work
   * starts at once in the accepting process, with no limit. See {@link QueueOptions}.
   */
  queue?: QueueOptions;
  /**
   * Where the 202 of accepted work (`respond: 'accepted'`) tells the caller to poll: its
   * `Location` header. Either the URL path of your status query (the one mounted with
   * `idem.operationStatusQuery`), e.g. `'/trpc/jobs.status'`, to which idem appends
   * `?input=` and `{"operationId":"..."}` URL-encoded (a tRPC GET without a transformer); or a
   * function of the operation id that returns the address, for anything else. With superjson the
   * input is wrapped:
   * `(id) => '/trpc/jobs.status?input=' + encodeURIComponent(JSON.stringify({ json: { operationId: id } }))`.
   * The address may be relative to the request (a path) or absolute. No default: idem does not
   * know where you mounted the status query, so an accepted procedure without it is a start-up
   * error.
   */
  statusLocation?: StatusLocation;
  /** Defaults for every idempotent procedure; each field can be overridden per procedure. */
  defaults?: IdempotencyOptions;
  /** Turns outputs into stored text and back. Defaults to {@link jsonSerializer}. */
  serializer?: ResultSerializer;
  /** Receives one event per request decision: hashes and ids only, never bodies. Defaults to none. */
  onEvent?: (event: IdemServerEvent) => void;
  /** Lease owner recorded on claims. Defaults to `<hostname>:<pid>:<random>`. */
  owner?: string;
  /**
   * Milliseconds a 409 in-progress answer, and a 202 of accepted work (its `Retry-After`), ask
   * the client to wait. Defaults to 1000.
   */
  inProgressRetryAfterMs?: number;
  /**
   * The poison cap of external-mode work: a record whose work was taken over this many times (its
   * worker vanished mid-work, or a lookup was owed), by a client's retry or a completer, goes to
   * NEEDS_RECONCILIATION (reason `takeover_limit`) at the next takeover instead of running again.
   * Released keys (transient failures) do not count. Defaults to 5 (`DEFAULT_MAX_TAKEOVERS`).
   */
  maxTakeovers?: number;
  /**
   * Encrypts the inputs external-mode procedures store for the completer (they may hold personal
   * data), e.g. `aesGcmCipher(key)`. Defaults to none: inputs are stored as JSON text, readable
   * by anyone who can read the table; erased by `eraseScope` and deleted by the reaper.
   */
  inputCipher?: TextCipher;
  /**
   * The OpenTelemetry meter for idem's metrics. Defaults to the global provider's `@idem/server`
   * meter: a no-op until you install an SDK.
   */
  meter?: Meter;
  /** Spans around claim, phases and completion (no-ops without an SDK). Defaults to true. */
  tracing?: boolean;
}

/**
 * Options of one idempotent procedure: the contract's {@link IdempotencyOptions} (documented
 * there, with defaults), with `replay` as a strategy object rather than its name.
 */
export type IdemProcedureOptions = Omit<IdempotencyOptions, 'replay'> & {
  /** What is stored for replay. Defaults to `{ kind: 'full' }`. See {@link ReplayStrategy}. */
  replay?: ReplayStrategy;
};

/** What {@link createIdempotency} returns: procedure builders to `.concat()`, and its workers. */
export interface Idempotency<TContext extends IdemContext, TTx> extends OperationTools<TContext> {
  /**
   * The completer: takes over abandoned external-mode work (expired leases, unknown outcomes) and
   * finishes it from its recovery point by running the procedure again as the record's owner.
   */
  completer(options: CompleterOptions<TContext>): Completer;
  /**
   * The worker pool of queued long-running work (with the `queue` option): takes PENDING records
   * (`FOR UPDATE SKIP LOCKED`, so every instance can run one) and runs at most `concurrency` at
   * once in this process. Start it on every instance that should do the work.
   */
  workerPool(options: WorkerPoolOptions<TContext>): WorkerPool;
  /**
   * The resolver of a status query scoped to the caller, ready to mount:
   * `status: authed.input(operationStatusInput).query(idem.operationStatusQuery)`. Another
   * caller's operation id answers 404 like a random one.
   */
  operationStatusQuery: ReturnType<typeof operationStatusQuery<TContext>>;
  /**
   * A procedure builder that makes a mutation idempotent. `.concat()` it after your input and
   * authentication: `authed.input(schema).concat(idem.procedure()).mutation(...)`.
   *
   * Local mode (the default): the handler's writes go through `ctx.idem.tx` and commit together
   * with the key and the stored result (the key is taken at commit unless `claim: 'first'`).
   */
  procedure(
    options?: IdemProcedureOptions & { mode?: 'local'; respond?: 'result' },
  ): IdemProcedureBuilder<TContext, LocalIdemExecution<TTx>>;
  /**
   * External mode, for side effects outside the database: the claim commits first, the handler
   * runs outside any transaction, the result is written conditioned on the record version.
   */
  procedure(
    options: IdemProcedureOptions & { mode: 'external'; respond?: 'result'; claim?: 'first' },
  ): IdemProcedureBuilder<TContext, ExternalIdemExecution<TTx>>;
  /**
   * Long-running work (`respond: 'accepted'`, external mode): every request is answered 202 with
   * `{ operationId, state }`, `Location` (from `statusLocation`, required) and `Retry-After`
   * while the work goes on. The procedure's output type, as the client
   * sees it, is what the wire carries: {@link AcceptedOperation}, whatever the handler returns
   * (its result is read with `operationStatus`).
   */
  procedure(
    options: IdemProcedureOptions & { mode: 'external'; respond: 'accepted'; claim?: 'first' },
  ): IdemProcedureBuilder<TContext, ExternalIdemExecution<TTx>, AcceptedOperation>;
}

/**
 * Creates idem's procedure builders for one app.
 *
 * @example
 * const idem = createIdempotency({ store, scope: (ctx: Context) => ctx.accountId });
 * const appRouter = t.router({
 *   create: authed.input(CreateOrder).concat(idem.procedure()).mutation(async ({ ctx, input }) =>
 *     ctx.idem.tx.insert(orders).values(input).returning()),
 * });
 */
export function createIdempotency<TContext extends IdemContext, TTx>(
  options: CreateIdempotencyOptions<TContext, TTx>,
): Idempotency<TContext, TTx> {
  if (typeof options.scope !== 'function') {
    throw new TypeError(
      'createIdempotency: `scope` is required: idempotency keys are never global',
    );
  }
  if (!options.store) throw new TypeError('createIdempotency: `store` is required');
  const keySecrets = checkedKeySecrets(options.keySecret, options.previousKeySecrets);
  const defaults = idempotencyOptionsSchema.parse(options.defaults ?? {});
  const runtime = createIdemRuntime(options, defaults, keySecrets);
  keepStatusLocation(runtime, options.statusLocation);
  const t = buildPlugin<TContext>();
  /** Scope suffixes of this app's procedures: operation lookups accept the caller's scopes only. */
  const suffixes = new Set<string | undefined>([undefined]);

  function procedure(procedureOptions: IdemProcedureOptions = {}) {
    const { meta, resolved } = resolveProcedureOptions(runtime, defaults, procedureOptions);
    suffixes.add(resolved.scopeSuffix);
    runtime.windows.built(resolved);
    return buildProcedure<TContext, IdemExecution>(t, meta, (call) =>
      runRequest(runtime, resolved, options.scope, call),
    );
  }
  const scopesOf = async (ctx: TContext) => {
    const base = await options.scope(ctx);
    return typeof base === 'string' && base.length > 0
      ? [...suffixes].map((suffix) => composeScope(base, suffix))
      : [];
  };
  const tools = createOperationTools(runtime, scopesOf);
  return {
    procedure,
    completer: (completerOptions: CompleterOptions<TContext>) => {
      // Start-up is the first moment idem sees the router: refuse a misplaced idem.procedure()
      // here rather than answer 500 to every call of it.
      const misplaced = findMisplacedIdempotency(completerOptions.router);
      if (misplaced.length > 0) {
        throw new TypeError(
          `idem: ${misplaced.map(({ path, problem }) => `${path}: ${problem}`).join('; ')}`,
        );
      }
      runtime.windows.learn(completerOptions.router);
      return createCompleter(runtime, completerOptions);
    },
    workerPool: (poolOptions: WorkerPoolOptions<TContext>) =>
      createWorkerPool(runtime, poolOptions),
    ...tools,
    operationStatusQuery: operationStatusQuery(tools),
  } as Idempotency<TContext, TTx>;
}
