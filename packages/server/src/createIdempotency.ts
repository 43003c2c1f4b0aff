import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Meter } from '@opentelemetry/api';
import { initTRPC, TRPCError } from '@trpc/server';
import type { TRPCDefaultErrorShape } from '@trpc/server';
import type {
  GetRawInputFn,
  MiddlewareResult,
  ProcedureBuilder,
  UnsetMarker,
} from '@trpc/server/unstable-core-do-not-import';
import {
  DEFAULT_LEASE_MS,
  DEFAULT_MAX_TAKEOVERS,
  DEFAULT_LOCK_TIMEOUT_MS,
  DEFAULT_REPLAY_WINDOW_MS,
  DEFAULT_RETENTION_MS,
  FINGERPRINT_VERSION,
  RETRY_AFTER_HEADER,
  idempotencyOptionsSchema,
  parseIdempotencyKey,
  type IdemMeta,
  type IdempotencyOptions,
  type IdempotencyStore,
} from '@idem/contract';
import { executeExternal } from './phases/executeExternal.js';
import { executeLocal } from './phases/executeLocal.js';
import { isDatabaseUnreachable, storeUnavailable } from './errors/storeUnavailable.js';
import { findNul, fingerprint, hashIdempotencyKey } from './request/fingerprint.js';
import type { IdemContext } from './request/idemContext.js';
import type {
  ExternalIdemExecution,
  IdemExecution,
  LocalIdemExecution,
} from './request/IdemExecution.js';
import type {
  IdemJob,
  IdemRuntime,
  NextResult,
  ResolvedProcedureOptions,
} from './request/IdemJob.js';
import { idemTRPCError } from './errors/IdemRequestError.js';
import { markIdemMiddleware } from './trpc/idemMiddlewareMark.js';
import { findMisplacedIdempotency } from './trpc/auditRouter.js';
import { formatIdemError, type IdemErrorShape } from './errors/formatIdemError.js';
import type { IdemServerEvent } from './telemetry/IdemServerEvent.js';
import { jsonSerializer, type ResultSerializer } from './replay/ResultSerializer.js';
import type { ReplayStrategy } from './replay/ReplayStrategy.js';
import { stepsNeedInputCipher } from './phases/stepResultCodec.js';
import {
  createCompleter,
  type Completer,
  type CompleterOptions,
} from './workers/createCompleter.js';
import { createOperationTools, type OperationTools } from './operations/operationTools.js';
import type { TextCipher } from './replay/aesGcmCipher.js';
import { createIdemTelemetry } from './telemetry/idemTelemetry.js';

/** Options of {@link createIdempotency} (configured once per app). */
export interface CreateIdempotencyOptions<TContext extends IdemContext, TTx> {
  /** The key store, e.g. `createPostgresJsStore(db)` from `@idem/store-drizzle/postgres-js`. */
  store: IdempotencyStore<TTx>;
  /**
   * Required. The caller's scope, from the authenticated context: e.g. `${accountId}:live`. Keys
   * are unique per (scope, procedure, key); there is no global default, and an empty scope is
   * refused. Put idem after your authentication middleware.
   */
  scope: (ctx: TContext) => string | Promise<string>;
  /** Defaults for every idempotent procedure; each field can be overridden per procedure. */
  defaults?: IdempotencyOptions;
  /** Turns outputs into stored text and back. Defaults to {@link jsonSerializer}. */
  serializer?: ResultSerializer;
  /** Receives one event per request decision: hashes and ids only, never bodies. Defaults to none. */
  onEvent?: (event: IdemServerEvent) => void;
  /** Lease owner recorded on claims. Defaults to `<hostname>:<pid>:<random>`. */
  owner?: string;
  /** Milliseconds a 409 in-progress answer asks the client to wait. Defaults to 1000. */
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
   * A procedure builder that makes a mutation idempotent. `.concat()` it after your input and
   * authentication: `authed.input(schema).concat(idem.procedure()).mutation(...)`.
   *
   * Local mode (the default): the handler's writes go through `ctx.idem.tx` and commit together
   * with the claim and the stored result.
   */
  procedure(
    options?: IdemProcedureOptions & { mode?: 'local'; respond?: 'result' },
  ): IdemProcedureBuilder<TContext, LocalIdemExecution<TTx>>;
  /**
   * External mode, for side effects outside the database: the claim commits first, the handler
   * runs outside any transaction, the result is written conditioned on the record version.
   */
  procedure(
    options: IdemProcedureOptions & { mode: 'external' },
  ): IdemProcedureBuilder<TContext, ExternalIdemExecution<TTx>>;
}

function buildPlugin<TContext extends IdemContext>() {
  return initTRPC.context<TContext>().meta<IdemMeta>().create({ isDev: false }); // never send stack traces of idem's own errors
}

function buildProcedure<TContext extends IdemContext, TIdem extends IdemExecution>(
  t: ReturnType<typeof buildPlugin<TContext>>,
  meta: IdempotencyOptions,
  handle: (opts: {
    ctx: TContext;
    path: string;
    type: string;
    input: unknown;
    next: (idem: TIdem) => Promise<NextResult>;
  }) => Promise<NextResult>,
): IdemProcedureBuilder<TContext, TIdem> {
  const builder = t.procedure
    .meta({ idempotency: meta })
    .errors(formatIdemError)
    .use(async (opts) => {
      const result = await handle({
        ctx: opts.ctx as TContext,
        path: opts.path,
        type: opts.type,
        input: opts.input,
        next: (idem) =>
          // tRPC's runtime takes both; its types spell them as two overloads.
          (opts.next as (o: { ctx: object; getRawInput: GetRawInputFn }) => Promise<NextResult>)({
            ctx: { idem },
            getRawInput: () => Promise.reject(inputAfterIdem(opts.path)),
          }),
      });
      return result as MiddlewareResult<{ idem: TIdem }>;
    });
  markIdemMiddleware(builder._def.middlewares.at(-1)!);
  return builder as unknown as IdemProcedureBuilder<TContext, TIdem>;
  // The cast names the builder: tRPC spells the same context through its own unwrapping, and the
  // input slot is `unknown` on purpose (see IdemProcedureBuilder).
}

/**
 * What a step after idem gets when it reads the raw input. tRPC's input parsers read it: one
 * that runs after idem (`.concat(idem.procedure()).input(More)`, which tRPC merges into an object
 * input) would give the handler input the fingerprint never saw, so a reused key with a different
 * input would replay the first result. The request fails instead, before the handler runs, and
 * the key is released (a 500 is never stored).
 */
function inputAfterIdem(path: string): TRPCError {
  return new TRPCError({
    code: 'INTERNAL_SERVER_ERROR',
    message: `idem: ${path} reads its input after idem.procedure(): put every .input() before .concat(idem.procedure())`,
  });
}

/**
 * The builder type `idem.procedure()` returns: adds `ctx.idem`, idem's meta, and the error shape
 * that marks the procedure idempotent in the router type.
 *
 * Its parsed-input slot is `unknown`, not tRPC's "unset": the key's fingerprint is taken from the
 * input idem's middleware sees, which is the parsed input only if every `.input()` comes before
 * `.concat(idem.procedure())`. `unknown` leaves the input of a builder that already has one
 * unchanged (`{ cartId: string } & unknown` is `{ cartId: string }`), and makes any later
 * `.input()` a compile error ("All input parsers did not resolve to an object"): written the other
 * way round, a reused key with a different input would replay the first result.
 */
export type IdemProcedureBuilder<TContext, TIdem> = ProcedureBuilder<
  TContext,
  IdemMeta,
  { idem: TIdem },
  UnsetMarker,
  unknown,
  UnsetMarker,
  UnsetMarker,
  false,
  IdemErrorShape | TRPCDefaultErrorShape
>;

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
  const defaults = idempotencyOptionsSchema.parse(options.defaults ?? {});
  const onEvent = options.onEvent;
  const telemetry = createIdemTelemetry({
    ...(options.meter ? { meter: options.meter } : {}),
    tracing: options.tracing ?? true,
  });
  const runtime: IdemRuntime = {
    store: options.store as IdempotencyStore<unknown>,
    serializer: options.serializer ?? jsonSerializer,
    owner: options.owner ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`,
    inProgressRetryAfterMs: options.inProgressRetryAfterMs ?? 1000,
    maxTakeovers: checkedMaxTakeovers(options.maxTakeovers),
    inputCipher: options.inputCipher ?? null,
    telemetry,
    emit: (event) => {
      telemetry.onEvent(event);
      if (!onEvent) return;
      try {
        onEvent(event);
      } catch {
        // A failing log hook must never change a request's outcome.
      }
    },
  };
  const t = buildPlugin<TContext>();
  /** Scope suffixes of this app's procedures: operation lookups accept the caller's scopes only. */
  const suffixes = new Set<string | undefined>([undefined]);

  function procedure(procedureOptions: IdemProcedureOptions = {}) {
    const { replay = { kind: 'full' }, ...rest } = procedureOptions;
    const merged = idempotencyOptionsSchema.parse({ ...defaults, ...rest, replay: replay.kind });
    const resolved: ResolvedProcedureOptions = {
      mode: merged.mode ?? 'local',
      replayWindowMs: merged.replayWindowMs ?? DEFAULT_REPLAY_WINDOW_MS,
      retentionMs: merged.retentionMs ?? DEFAULT_RETENTION_MS,
      leaseMs: merged.leaseMs ?? DEFAULT_LEASE_MS,
      lockTimeoutMs: merged.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS,
      failures: merged.failures ?? 'deterministic',
      scopeSuffix: merged.scopeSuffix,
      respond: merged.respond ?? 'result',
      replay,
    };
    suffixes.add(resolved.scopeSuffix);
    if (resolved.respond === 'accepted' && resolved.mode !== 'external') {
      throw new TypeError(
        "idem: respond: 'accepted' needs mode: 'external' (the work outlives the request)",
      );
    }
    if (resolved.retentionMs < resolved.replayWindowMs) {
      throw new TypeError(
        `idem: retentionMs (${resolved.retentionMs}) must be at least replayWindowMs (${resolved.replayWindowMs})`,
      );
    }
    if (
      resolved.mode === 'external' &&
      typeof (runtime.store as { saveSteps?: unknown }).saveSteps !== 'function'
    ) {
      throw new TypeError(
        'idem: external mode needs a store with recovery support (saveSteps, markUnsettled, ...)',
      );
    }
    if (
      resolved.mode === 'external' &&
      stepsNeedInputCipher(replay.kind) &&
      runtime.inputCipher === null
    ) {
      throw new TypeError(
        `idem: an external-mode procedure with replay '${replay.kind}' keeps its step results sealed; pass inputCipher (e.g. aesGcmCipher(key)) to createIdempotency`,
      );
    }
    const execute = resolved.mode === 'local' ? executeLocal : executeExternal;
    return buildProcedure<TContext, IdemExecution>(t, merged, async (opts) => {
      const job = await prepareJob(runtime, resolved, options.scope, opts);
      const started = performance.now();
      try {
        const result = await execute(job);
        // The handler failed because the database went away (an outage mid-phase): a 503.
        if (!result.ok && isDatabaseUnreachable(result.error)) {
          throw storeUnavailable(job, result.error);
        }
        return result;
      } finally {
        telemetry.requestDuration(performance.now() - started, job.claim.procedure);
      }
    });
  }
  const scopesOf = async (ctx: TContext) => {
    const base = await options.scope(ctx);
    return typeof base === 'string' && base.length > 0
      ? [...suffixes].map((suffix) => (suffix ? `${base}:${suffix}` : base))
      : [];
  };
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
      return createCompleter(runtime, completerOptions);
    },
    ...createOperationTools(runtime, scopesOf),
  } as Idempotency<TContext, TTx>;
}

const identity = (text: string) => text;

function checkedMaxTakeovers(value: number | undefined): number {
  if (value === undefined) return DEFAULT_MAX_TAKEOVERS;
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new TypeError(`createIdempotency: maxTakeovers must be an integer from 0, got ${value}`);
  }
  return value;
}

async function prepareJob<TContext extends IdemContext>(
  runtime: IdemRuntime,
  options: ResolvedProcedureOptions,
  scopeOf: (ctx: TContext) => string | Promise<string>,
  opts: {
    ctx: TContext;
    path: string;
    type: string;
    input: unknown;
    next: (idem: never) => Promise<NextResult>;
  },
): Promise<IdemJob> {
  const { ctx, path, type, input } = opts;
  if (type !== 'mutation') {
    throw new TRPCError({
      code: 'INTERNAL_SERVER_ERROR',
      message: `idem: ${path} is a ${type}; only mutations take idempotency keys`,
    });
  }
  const request = ctx.idemRequest;
  if (!request) {
    throw new TRPCError({
      code: 'INTERNAL_SERVER_ERROR',
      message:
        'idem: ctx.idemRequest is missing: spread idemContext(opts) into your createContext result',
    });
  }
  const base = await scopeOf(ctx);
  if (typeof base !== 'string' || base.length === 0) {
    throw new TRPCError({
      code: 'INTERNAL_SERVER_ERROR',
      message: `idem: scope() returned no scope for ${path}; idempotency keys are never global`,
    });
  }
  const scope = options.scopeSuffix ? `${base}:${options.scopeSuffix}` : base;
  const resume = request.resume ?? null;
  if (resume && (resume.scope !== scope || resume.procedure !== path)) {
    throw new TRPCError({
      code: 'INTERNAL_SERVER_ERROR',
      message: `idem: the completer's context gives scope for ${path} that does not match record ${resume.id}`,
    });
  }
  // The completer resumes a record by id; it has no key, only the key's hash.
  const parsed = resume
    ? ({ ok: true, keyHash: resume.keyHash } as const)
    : parseIdempotencyKey(request.keyValues);
  const keyHash = parsed.ok
    ? 'keyHash' in parsed
      ? parsed.keyHash
      : hashIdempotencyKey(parsed.key)
    : '';
  const event = { procedure: path, scope, keyHash, requestId: request.requestId };

  const reject: IdemJob['reject'] = (reason, message, extra = {}) => {
    runtime.emit({ ...event, type: 'rejected', reason, operationId: extra.operationId ?? null });
    if (extra.retryAfterMs !== undefined) {
      request.response.headers.set(
        RETRY_AFTER_HEADER,
        String(Math.max(1, Math.ceil(extra.retryAfterMs / 1000))),
      );
    }
    return idemTRPCError(reason, message, extra);
  };
  if (!parsed.ok) throw reject(parsed.reason, parsed.message);
  if (request.batch) {
    throw reject(
      'IDEMPOTENCY_BATCH_REFUSED',
      `${path} is idempotent: send it alone, not in a batch (?batch=1)`,
    );
  }
  // Before the claim: PostgreSQL refuses NUL in text, and the claim may store the input.
  const nulAt = resume ? null : findNul(input);
  if (nulAt)
    throw reject('IDEMPOTENCY_INPUT_UNSTORABLE', `the input holds U+0000 (NUL) at ${nulAt}`);

  const storedInput =
    options.mode === 'external'
      ? (runtime.inputCipher?.encrypt ?? identity)(runtime.serializer.serialize(input))
      : null;
  return {
    runtime,
    options,
    request,
    input,
    ctx,
    resume: request.resume ?? null,
    claim: {
      input: storedInput,
      scope,
      procedure: path,
      keyHash,
      fingerprint: fingerprint(input),
      fingerprintVersion: FINGERPRINT_VERSION,
      leaseMs: options.leaseMs,
      owner: runtime.owner,
      maxTakeovers: runtime.maxTakeovers,
    },
    execution: {
      keyHash,
      scope,
      procedure: path,
      requestId: request.requestId,
      clientAttempt: request.attempt,
      remainingMs: () =>
        request.timeoutMs === null
          ? null
          : Math.max(0, request.timeoutMs - (Date.now() - request.receivedAt)),
    },
    event,
    next: opts.next as IdemJob['next'],
    reject,
  };
}
