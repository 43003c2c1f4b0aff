import type { Meter } from '@opentelemetry/api';
import type { IdempotencyOptions, RecoveryStore } from '@idem/contract';
import type { IdemContext } from './IdemRequest.js';
import type { IdemServerEvent } from './IdemServerEvent.js';
import type { ReplayStrategy } from './ReplayStrategy.js';
import type { ResultSerializer } from './ResultSerializer.js';
import type { TextCipher } from './TextCipher.js';

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
  /**
   * Whether a call to an idempotent procedure must carry an `Idempotency-Key`, for every procedure
   * that does not set its own `keys`. Defaults to `'required'`: a call without a key is refused
   * with 400 `IDEMPOTENCY_KEY_MISSING`. `'optional'` is for rolling idem out while clients without
   * idem's link are still in use: see {@link KeyRequirement}.
   */
  keys?: KeyRequirement;
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
  /**
   * Whether a call must carry an `Idempotency-Key`. Defaults to the app's `keys` of
   * `createIdempotency` (itself `'required'` by default). See {@link KeyRequirement}.
   */
  keys?: KeyRequirement;
};

/**
 * Whether a call to an idempotent procedure must carry an `Idempotency-Key`.
 *
 * - `required` (the default): a call without a key is refused with 400 `IDEMPOTENCY_KEY_MISSING`,
 *   and a batch (`?batch=1`) that holds the procedure with 400 `IDEMPOTENCY_BATCH_REFUSED`.
 * - `optional`: a call without a key runs as it would without idem: nothing is claimed, stored
 *   or replayed, a batch may hold it, its response carries `Idempotency-Protected: false`, and it
 *   is counted (metric `idem.server.unprotected_calls`, event `unprotected`). A call with a key
 *   is handled exactly as under `required`, and a malformed key is still refused. For rolling idem
 *   out (docs/operations.md, "Rolling out"); not with `respond: 'accepted'`.
 */
export type KeyRequirement = 'required' | 'optional';

/** Options of the queue of long-running work (`queue` of `createIdempotency`). */
export interface QueueOptions {
  /**
   * The most records queued (PENDING) over this app's accepted procedures: a new request beyond
   * it is refused with 503 `IDEMPOTENCY_QUEUE_FULL` (retryable) and nothing is stored.
   * Defaults to 1 000.
   */
  maxDepth?: number;
  /** Milliseconds a queue-full answer asks the client to wait. Defaults to 1 000. */
  retryAfterMs?: number;
}

/**
 * Where a 202 tells the caller to poll: the URL path of the status query (idem appends
 * `?input=`), or a function of the operation id that returns the whole address.
 */
export type StatusLocation = string | ((operationId: string) => string);
