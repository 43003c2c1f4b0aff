import type { Meter } from '@opentelemetry/api';
import {
  idempotencyOptionsSchema,
  type IdempotencyOptions,
  type RecoveryStore,
} from '@idem/contract';
import type { IdemContext } from './types/IdemRequest.js';
import type {
  ExternalIdemExecution,
  IdemExecution,
  LocalIdemExecution,
} from './types/IdemExecution.js';
import { createIdemRuntime } from './request/createIdemRuntime.js';
import { composeScope, runRequest } from './request/prepareJob.js';
import { checkedKeyRequirement } from './request/keyRequirement.js';
import { resolveProcedureOptions } from './request/resolveProcedureOptions.js';
import { findMisplacedIdempotency } from './trpc/auditRouter.js';
import {
  buildPlugin,
  buildProcedure,
  type IdemProcedureBuilder,
} from './trpc/idemProcedureBuilder.js';
import type { IdemServerEvent } from './types/IdemServerEvent.js';
import type { ResultSerializer } from './types/ResultSerializer.js';
import type { ReplayStrategy } from './types/ReplayStrategy.js';
import {
  createCompleter,
  type Completer,
  type CompleterOptions,
} from './workers/createCompleter.js';
import { createOperationTools, type OperationTools } from './operations/operationTools.js';
import type { TextCipher } from './types/TextCipher.js';
import { type AcceptedOperation } from './replay/acceptedResponse.js';
import { checkedKeySecrets } from './hashing/keyHash.js';
import { operationStatusQuery } from './operations/operationStatusProcedure.js';
import { createWorkerPool, type WorkerPool, type WorkerPoolOptions } from './workers/workerPool.js';
import { type QueueOptions } from './types/options.js';
import type { CreateIdempotencyOptions, IdemProcedureOptions } from './types/options.js';

export type { IdemProcedureBuilder } from './trpc/idemProcedureBuilder.js';

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
   * (its result is read with `operationStatus`). Every call needs a key: `keys: 'optional'`
   * does not compile here, and an app default of `'optional'` is a start-up error unless the
   * procedure sets `keys: 'required'`.
   */
  procedure(
    options: IdemProcedureOptions & {
      mode: 'external';
      respond: 'accepted';
      claim?: 'first';
      keys?: 'required';
    },
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
  const keys = checkedKeyRequirement(options.keys, 'createIdempotency') ?? 'required';
  const defaults = idempotencyOptionsSchema.parse(options.defaults ?? {});
  const runtime = createIdemRuntime(options, defaults, keySecrets);
  const t = buildPlugin<TContext>();
  /** Scope suffixes of this app's procedures: operation lookups accept the caller's scopes only. */
  const suffixes = new Set<string | undefined>([undefined]);

  function procedure(procedureOptions: IdemProcedureOptions = {}) {
    const { meta, resolved } = resolveProcedureOptions(runtime, defaults, procedureOptions, keys);
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
