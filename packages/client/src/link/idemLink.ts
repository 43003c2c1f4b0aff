import type { Meter } from '@opentelemetry/api';
import { createClientTelemetry } from '../telemetry/clientTelemetry.js';
import { httpLink, type HTTPLinkOptions, type Operation, type TRPCLink } from '@trpc/client';
import type { AnyTRPCRouter } from '@trpc/server';
import { observable } from '@trpc/server/observable';
import { positiveInteger, timerMs } from '../retry/assertOptions.js';
import { attemptHeaders, withAttemptHeaders } from './attemptHeaders.js';
import type { Backoff } from '../retry/backoff/Backoff.js';
import { fullJitter } from '../retry/backoff/fullJitter.js';
import type { OperationKind } from '../types/RetryDecision.js';
import { idemFetch } from './idemFetch.js';
import { BodyPins, CallBody } from './BodyPins.js';
import { CallStop } from '../retry/CallStop.js';
import { firstEnvelope, type Envelope } from './firstEnvelope.js';
import type { IdemGiveUpEvent, IdemLogger, IdemRetryEvent } from '../telemetry/IdemEvent.js';
import type { IdempotencyKeyFunction, IdempotentProcedures } from '../keys/IdempotentProcedures.js';
import type { RetrySafeOption, RetrySafeProcedures } from '../keys/RetrySafeProcedures.js';
import { randomKey } from '../keys/intentKeys.js';
import { resolveIdempotencyKey } from '../keys/resolveIdempotencyKey.js';
import { RetryBudget } from '../retry/RetryBudget.js';
import { systemClock, type RetryClock } from '../retry/RetryClock.js';
import { runWithRetries } from '../retry/runWithRetries.js';
import { toClientError } from '../errors/toClientError.js';

/**
 * Why a call stops when tRPC unsubscribes before it settled (`CallStop.stop`). Made once: the
 * attempt passes it on as its abort reason, and an `abort()` without one builds a `DOMException`,
 * with its stack trace. It reaches only this call's own transport and retry loop, whose outcome
 * is no longer delivered.
 */
const UNSUBSCRIBED = Object.assign(new Error('idem: the call was unsubscribed'), {
  name: 'AbortError',
});

/** The link's defaults, in one place. */
export const IDEM_LINK_DEFAULTS = {
  maxAttempts: 3,
  attemptTimeoutMs: 10_000,
  deadlineMs: 30_000,
  retryOn500: false,
  retryQueries: true,
} as const;

/**
 * Options of {@link idemLink}. Every option but `http` and `idempotent` (and `retrySafe`, when the
 * router has retry-safe mutations) has a default.
 */
export interface IdemLinkOptions<TRouter extends AnyTRPCRouter> {
  /**
   * How idem sends idempotent mutations: tRPC's `httpLink` options (`url`, `transformer`,
   * `headers`, `fetch`, ...), normally the same as your terminating link's. idem sends each
   * idempotent mutation itself, one HTTP request per attempt and never batched, because a batch
   * shares one set of headers and each mutation needs its own `Idempotency-Key`. Everything else
   * (queries, other mutations, subscriptions) continues down your link chain.
   */
  http: HTTPLinkOptions<TRouter['_def']['_config']['$types']>;
  /**
   * Every idempotent mutation of the router, checked against it by the compiler (see
   * {@link IdempotentProcedures}): `true`, or `{ key: (input) => string }` to derive keys. Any
   * other procedure of the router does not compile here, however the list is written; an entry
   * that is neither (`false`, `null`) is refused when the link is made, and `undefined` is absent.
   */
  idempotent: IdempotentProcedures<TRouter>;
  /**
   * Every mutation the server marks `retrySafe()` (safe to retry by nature: a delete by id, a set
   * to a given value), checked against the router by the compiler (see
   * {@link RetrySafeProcedures}): `true` for each. idem retries them without a key, on the same
   * failures and with the same policy as idempotent mutations (backoff, budget, deadline), and
   * sends them down your link chain like any call without a key. Required when the router has
   * such mutations, so the list cannot forget one; defaults to none otherwise. Any other
   * procedure does not compile here (an idempotent one belongs in `idempotent`); an entry that is
   * not `true` is refused when the link is made, and `undefined` is absent.
   */
  retrySafe?: RetrySafeProcedures<TRouter>;
  /**
   * Most attempts per call, counting the first. Defaults to 3 attempts (AWS SDK standard mode).
   * 1 turns retries off (a single batch job that reruns as a whole).
   */
  maxAttempts?: number;
  /**
   * Milliseconds one attempt may take before idem aborts it and, if allowed, retries with the same
   * key. Defaults to 10 000 ms. Set it to 2 to 3 times the procedure's measured p99 latency.
   */
  attemptTimeoutMs?: number;
  /**
   * Milliseconds for the whole call: every attempt and every sleep, never reset per attempt. What
   * is left travels to the server in `Idempotency-Timeout-Ms`. Defaults to 30 000 ms.
   */
  deadlineMs?: number;
  /** Sleep before each retry. Defaults to `fullJitter()` (base 500 ms, cap 10 s). */
  backoff?: Backoff;
  /**
   * The retry budget. Defaults to a new `RetryBudget()` per client (500 tokens, 5 per retry,
   * 10 per retry after a timeout, 1 back per success). Pass one instance to several links to
   * share it.
   */
  budget?: RetryBudget;
  /**
   * Retry HTTP 500 too. Defaults to `false`: a 500 is often a bug, and a bug answers the same way
   * every time.
   */
  retryOn500?: boolean;
  /** Retry queries (they are safe to repeat). Defaults to `true`. */
  retryQueries?: boolean;
  /** Called before every retry. Defaults to none. */
  onRetry?: (event: IdemRetryEvent) => void;
  /** Called once when a call ends in an error (not when the caller aborts it). Defaults to none. */
  onGiveUp?: (event: IdemGiveUpEvent) => void;
  /** Logs retries (`info`) and give-ups (`warn`). Defaults to none; `console` fits. */
  logger?: IdemLogger;
  /**
   * The OpenTelemetry meter for attempts, retries by reason, budget exhaustion and give-ups
   * (`CLIENT_METRICS`). Defaults to the global provider's `@idem/client` meter: a no-op until you
   * install an SDK.
   */
  meter?: Meter;
  /** Time source for deadlines and sleeps. Defaults to the system clock; inject one in tests. */
  clock?: RetryClock;
  /** Uniform random numbers in [0, 1) for jitter. Defaults to `Math.random`. */
  random?: () => number;
}

/**
 * The idem link: one idempotency key per logical mutation call, and the retry loop for every call.
 *
 * Put it before your terminating link (`httpBatchLink` or `httpLink`). Idempotent mutations are
 * sent by idem itself, unbatched, with their key and per-attempt headers; queries and other
 * mutations go down your chain and are retried there when that is safe: queries and retry-safe
 * mutations on the retry list, other mutations only when no connection was made.
 */
export function idemLink<TRouter extends AnyTRPCRouter>(
  opts: IdemLinkOptions<TRouter> & RetrySafeOption<TRouter>,
): TRPCLink<TRouter> {
  // Configured once.
  const keyFunctions = keyFunctionsOf(opts.idempotent);
  const retrySafe = retrySafePathsOf(opts.retrySafe, keyFunctions);
  const maxAttempts = positiveInteger(
    'maxAttempts',
    opts.maxAttempts ?? IDEM_LINK_DEFAULTS.maxAttempts,
  );
  const attemptTimeoutMs = timerMs(
    'attemptTimeoutMs',
    opts.attemptTimeoutMs ?? IDEM_LINK_DEFAULTS.attemptTimeoutMs,
  );
  const deadlineMs = timerMs('deadlineMs', opts.deadlineMs ?? IDEM_LINK_DEFAULTS.deadlineMs);
  const backoff = opts.backoff ?? fullJitter();
  const retryOn500 = opts.retryOn500 ?? IDEM_LINK_DEFAULTS.retryOn500;
  const retryQueries = opts.retryQueries ?? IDEM_LINK_DEFAULTS.retryQueries;
  const clock = opts.clock ?? systemClock;
  const random = opts.random ?? Math.random;
  const telemetry = createClientTelemetry(opts.meter);
  const onRetry = (event: IdemRetryEvent) => {
    telemetry.retry(event);
    opts.logger?.info(
      `idem: ${event.path} attempt ${event.attempt} failed (${event.failure}); retrying in ${event.delayMs} ms`,
      event,
    );
    opts.onRetry?.(event);
  };
  const onGiveUp = (event: IdemGiveUpEvent) => {
    telemetry.giveUp(event);
    if (event.because !== 'not-retryable' || event.attempt > 1) {
      opts.logger?.warn(
        `idem: ${event.path} failed after ${event.attempt} attempt(s) (${event.failure}); not retried: ${event.because}`,
        event,
      );
    }
    opts.onGiveUp?.(event);
  };

  return (runtime) => {
    // Per client: one budget, one unbatched transport.
    const budget = opts.budget ?? new RetryBudget();
    const headersOf = new WeakMap<Operation, Record<string, string>>();
    const bodies = new BodyPins();
    const userHeaders = opts.http.headers;
    const send = httpLink<TRouter>({
      ...opts.http,
      fetch: bodies.fetch(idemFetch(opts.http.fetch)),
      // Not `async`: with static headers (or a synchronous function) no promise is made per call.
      headers({ op }) {
        const own = typeof userHeaders === 'function' ? userHeaders({ op }) : (userHeaders ?? {});
        return isPromiseLike(own)
          ? Promise.resolve(own).then((mine) => withAttemptHeaders(mine, headersOf.get(op)))
          : withAttemptHeaders(own, headersOf.get(op));
      },
    } as HTTPLinkOptions<TRouter['_def']['_config']['$types']>)(runtime);

    return ({ op, next }) => {
      // Per call.
      if (op.type === 'subscription') return next(op);
      if (op.type === 'query' && !retryQueries) return next(op);
      const operation: OperationKind =
        op.type === 'query'
          ? 'query'
          : keyFunctions.has(op.path)
            ? 'idempotent-mutation'
            : retrySafe.has(op.path)
              ? 'retry-safe-mutation'
              : 'mutation';

      return observable((observer) => {
        // One per call, in place of an AbortController: the caller's signal and tRPC's
        // unsubscribe stop the loop through it.
        const stop = new CallStop(op.signal);
        let idempotencyKey: string | undefined;
        // The body every attempt of this call sends: the first attempt's (see BodyPins).
        let body: CallBody | undefined;
        if (operation === 'idempotent-mutation') {
          try {
            idempotencyKey = resolveIdempotencyKey(op, keyFunctions.get(op.path), randomKey);
          } catch (error) {
            stop.dispose();
            observer.error(toClientError(error));
            return () => {};
          }
        }

        let settled = false;
        let unsubscribed = false;
        runWithRetries<Envelope<TRouter>>({
          call:
            idempotencyKey === undefined
              ? { path: op.path, operation }
              : { path: op.path, operation, idempotencyKey },
          attempt: (context) => {
            telemetry.attempt(op.path);
            if (idempotencyKey === undefined) {
              return firstEnvelope(next({ ...op, signal: context.signal }), context.onAbort);
            }
            // No signal for idem's own transport: `firstEnvelope` unsubscribes when the attempt
            // is aborted, and httpLink aborts its fetch on unsubscribe. An attempt signal here
            // would cost an AbortSignal and two listeners per call for nothing more.
            const attemptOp: Operation = { ...op, signal: null };
            headersOf.set(
              attemptOp,
              attemptHeaders({
                idempotencyKey,
                requestId: context.requestId,
                attempt: context.attempt,
                remainingMs: context.remainingMs,
              }),
            );
            bodies.expect((body ??= new CallBody()), context.requestId);
            return firstEnvelope(send({ op: attemptOp, next }), context.onAbort);
          },
          maxAttempts,
          attemptTimeoutMs,
          deadlineMs,
          backoff,
          budget,
          retryOn500,
          clock,
          random,
          newRequestId: randomKey,
          signal: stop,
          onRetry,
          onGiveUp,
        }).then(
          (envelope) => {
            settled = true;
            stop.dispose();
            if (body) bodies.release(body);
            observer.next(envelope);
            observer.complete();
          },
          (error: unknown) => {
            settled = true;
            stop.dispose();
            if (body) bodies.release(body);
            if (!unsubscribed) observer.error(toClientError(error));
          },
        );

        // tRPC unsubscribes after every result; once the loop has settled there is nothing left
        // to stop.
        return () => {
          if (settled) return;
          unsubscribed = true;
          stop.stop(UNSUBSCRIBED);
        };
      });
    };
  };
}

/**
 * The list as a map from path to key function, checked once. An entry is `true` or `{ key? }`;
 * `undefined` counts as absent (the list's type allows it for every other procedure of the
 * router). Anything else (`false`, `null`, a string) is refused: `keyFunctions.has(path)` would
 * read it as "idempotent", and the link would key and retry that procedure.
 */
function keyFunctionsOf(list: object): Map<string, IdempotencyKeyFunction<unknown> | undefined> {
  const keyFunctions = new Map<string, IdempotencyKeyFunction<unknown> | undefined>();
  if (typeof list !== 'object' || list === null) {
    throw new TypeError(`idemLink: idempotent must be an object of paths, got ${String(list)}`);
  }
  for (const [path, entry] of Object.entries(list) as [string, unknown][]) {
    if (entry === undefined) continue;
    if (entry === true) {
      keyFunctions.set(path, undefined);
      continue;
    }
    const options = typeof entry === 'object' && entry !== null;
    const key = options ? (entry as { key?: unknown }).key : undefined;
    if (!options || (key !== undefined && typeof key !== 'function')) {
      throw new TypeError(
        `idemLink: idempotent['${path}'] must be true or { key: (input) => string }, got ${describe(entry)}`,
      );
    }
    keyFunctions.set(path, key as IdempotencyKeyFunction<unknown> | undefined);
  }
  return keyFunctions;
}

/**
 * The retry-safe paths, checked once. An entry is `true`; `undefined` counts as absent. Anything
 * else is refused, and so is a path that is in `idempotent` too: the link would not know whether
 * to key it.
 */
function retrySafePathsOf(
  list: object | undefined,
  keyFunctions: ReadonlyMap<string, unknown>,
): ReadonlySet<string> {
  const paths = new Set<string>();
  if (list === undefined) return paths;
  if (typeof list !== 'object' || list === null) {
    throw new TypeError(`idemLink: retrySafe must be an object of paths, got ${String(list)}`);
  }
  for (const [path, entry] of Object.entries(list) as [string, unknown][]) {
    if (entry === undefined) continue;
    if (entry !== true) {
      throw new TypeError(`idemLink: retrySafe['${path}'] must be true, got ${describe(entry)}`);
    }
    if (keyFunctions.has(path)) {
      throw new TypeError(
        `idemLink: ${path} is in both idempotent and retrySafe; a mutation either takes a key or is safe to retry by nature: keep it in the list the server marks it for`,
      );
    }
    paths.add(path);
  }
  return paths;
}

function describe(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}

function isPromiseLike<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof (value as { then?: unknown }).then === 'function';
}
