import { FINGERPRINT_VERSION, parseIdempotencyKey, type RecoveryRecord } from '@idem/contract';
import { idemMisuse, reject, storeUnavailable } from '../errors/idemErrors.js';
import { isDatabaseUnreachable } from '../errors/isDatabaseUnreachable.js';
import { answerRefusal } from '../executors/answerRefusal.js';
import { executeExternal } from '../executors/executeExternal.js';
import { executeLocal } from '../executors/executeLocal.js';
import { executeUnprotected } from '../executors/executeUnprotected.js';
import type { IdemMiddlewareCall } from '../types/IdemJob.js';
import { findNul } from '../hashing/fingerprint.js';
import { claimFingerprint } from './claimFingerprint.js';
import { claimKeyHash, hashIdempotencyKey } from '../hashing/keyHash.js';
import { newOperationId } from './operationId.js';
import type { IdemContext, IdemRequest } from '../types/IdemRequest.js';
import type {
  IdemJob,
  IdemRuntime,
  NextResult,
  ResolvedProcedureOptions,
} from '../types/IdemJob.js';

/** The scope a key is claimed in: the caller's scope, then the procedure's suffix if it has one. */
export function composeScope(base: string, suffix: string | undefined): string {
  return suffix ? `${base}:${suffix}` : base;
}

/**
 * One request on an idempotent procedure, from idem's middleware to its answer (per request):
 * prepare the job, run it in the procedure's mode, and turn a handler that failed with the
 * database into the store's 503. The one place a refusal is answered: whatever the job throws
 * with `data.idem` gets its events and its Retry-After here (`answerRefusal`).
 */
export async function runRequest<TContext extends IdemContext>(
  runtime: IdemRuntime,
  options: ResolvedProcedureOptions,
  scopeOf: (ctx: TContext) => string | Promise<string>,
  call: IdemMiddlewareCall<TContext, never>,
): Promise<NextResult> {
  const caller = await identifyCaller(runtime, options, scopeOf, call);
  if (caller.unprotected) return runUnprotected(caller, options, call);
  let job: IdemJob | undefined;
  let started = 0;
  try {
    job = await prepareJob(runtime, options, call, caller);
    const execute = options.mode === 'local' ? executeLocal : executeExternal;
    started = performance.now();
    const result = await execute(job);
    // The handler failed because the database went away (an outage mid-phase): a 503.
    if (!result.ok && isDatabaseUnreachable(result.error)) throw storeUnavailable(result.error);
    return result;
  } catch (error) {
    answerRefusal(caller, error);
    throw error;
  } finally {
    if (job) runtime.telemetry.requestDuration(performance.now() - started, job.claim.procedure);
  }
}

/**
 * A call without a key to a procedure with `keys: 'optional'`: run as without idem (see
 * executeUnprotected). A handler that failed because the database went away is a 503, as with a
 * key; so is a failure of the transaction around the handler.
 */
async function runUnprotected<TContext extends IdemContext>(
  caller: Caller,
  options: ResolvedProcedureOptions,
  call: IdemMiddlewareCall<TContext, never>,
): Promise<NextResult> {
  try {
    const result = await executeUnprotected({
      runtime: caller.runtime,
      options,
      request: caller.request,
      scope: caller.scope,
      procedure: call.path,
      operationId: newOperationId(),
      next: call.next as IdemJob['next'],
    });
    if (!result.ok && isDatabaseUnreachable(result.error)) throw storeUnavailable(result.error);
    return result;
  } catch (error) {
    answerRefusal(caller, error);
    throw error;
  }
}

const identity = (text: string) => text;

/** Who is asking, and with which key: what a refusal's answer needs (per request). */
interface Caller {
  runtime: IdemRuntime;
  request: IdemRequest;
  scope: string;
  resume: RecoveryRecord | null;
  parsed: ReturnType<typeof parseIdempotencyKey> | { ok: true; keyHash: string };
  event: IdemJob['event'];
  /** No key, on a procedure with `keys: 'optional'`: the call runs unprotected. */
  unprotected: boolean;
}

/** The caller's scope and key, after the misuses a request can show (500s, no event). */
async function identifyCaller<TContext extends IdemContext>(
  runtime: IdemRuntime,
  options: ResolvedProcedureOptions,
  scopeOf: (ctx: TContext) => string | Promise<string>,
  opts: IdemMiddlewareCall<TContext, never>,
): Promise<Caller> {
  const { ctx, path, type } = opts;
  runtime.windows.seen(path, options);
  if (options.respond === 'accepted') runtime.acceptedPaths.add(path);
  if (type !== 'mutation') {
    throw idemMisuse.notAMutation(path, type);
  }
  const request = ctx.idemRequest;
  if (!request) {
    throw idemMisuse.missingIdemRequest();
  }
  const base = await scopeOf(ctx);
  if (typeof base !== 'string' || base.length === 0) {
    throw idemMisuse.noScope(path);
  }
  const scope = composeScope(base, options.scopeSuffix);
  const resume = request.resume ?? null;
  if (resume && (resume.scope !== scope || resume.procedure !== path)) {
    throw idemMisuse.resumeScopeMismatch(path, resume.id);
  }
  // Absent, not malformed: a header sent empty is a key, and refused as invalid.
  if (!resume && request.keyValues.length === 0 && options.keys === 'optional') {
    const event = { procedure: path, scope, keyHash: '', requestId: request.requestId };
    const parsed = { ok: true, keyHash: '' } as const;
    return { runtime, request, scope, resume, parsed, event, unprotected: true };
  }
  // The completer resumes a record by id; it has no key, only the key's hash.
  const parsed = resume
    ? ({ ok: true, keyHash: resume.keyHash } as const)
    : parseIdempotencyKey(request.keyValues);
  const keyHash = parsed.ok
    ? 'keyHash' in parsed
      ? parsed.keyHash
      : hashIdempotencyKey(parsed.key, runtime.keySecrets.current, scope)
    : '';
  const event = { procedure: path, scope, keyHash, requestId: request.requestId };
  return { runtime, request, scope, resume, parsed, event, unprotected: false };
}

/** The job of a request whose caller is known; throws its refusals (see runRequest). */
async function prepareJob<TContext extends IdemContext>(
  runtime: IdemRuntime,
  options: ResolvedProcedureOptions,
  opts: IdemMiddlewareCall<TContext, never>,
  caller: Caller,
): Promise<IdemJob> {
  const { ctx, path, input } = opts;
  const { request, scope, resume, parsed, event } = caller;
  let keyHash = event.keyHash;
  if (!parsed.ok) throw reject(parsed.reason, parsed.message);
  if ('key' in parsed && runtime.keySecrets.previous.length > 0) {
    try {
      keyHash = await claimKeyHash(runtime.store, runtime.keySecrets, {
        scope,
        procedure: path,
        key: parsed.key,
      });
    } catch (error) {
      throw storeUnavailable(error);
    }
    event.keyHash = keyHash;
  }
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

  const checked = claimFingerprint(
    input,
    options.mode === 'external' && !resume,
    runtime.serializer,
  );
  if (!checked.ok) throw reject('IDEMPOTENCY_INPUT_UNSTORABLE', checked.message);
  const storedInput =
    options.mode === 'external'
      ? (runtime.inputCipher?.encrypt ?? identity)(
          checked.storedText ?? runtime.serializer.serialize(input),
        )
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
      fingerprint: checked.fingerprint,
      fingerprintVersion: FINGERPRINT_VERSION,
      leaseMs: options.leaseMs,
      owner: runtime.owner,
      maxTakeovers: runtime.maxTakeovers,
      pending: options.respond === 'accepted' && runtime.queue !== null,
      // The id of the record this request may create, whichever statement creates it (a claim,
      // or the at-commit record): time-ordered, see newOperationId. A record found keeps its own.
      operationId: newOperationId(),
    },
    execution: {
      protected: true,
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
  };
}
