import type { TRPCError } from '@trpc/server';
import type { KeyAnswer, OutcomeRecord, StoredResponse } from '@idem/contract';
import { inProgress, storeUnavailable } from '../errors/idemErrors.js';
import { answerExisting, settledOutcome } from '../replay/answerExisting.js';
import { serializeFailure, storedFailureError } from '../replay/storedFailure.js';
import type { IdemJob, NextResult } from '../types/IdemJob.js';
import { trpcMiddlewareMarker } from '../trpc/trpcInternals.js';
import { classifyHandlerFailure } from '../phases/classifyHandlerFailure.js';
import { timedClaim } from './claimWithTelemetry.js';
import { emitExecuted } from './emitExecuted.js';
import { storedOutput } from './storeResult.js';

/** Thrown inside the transaction to roll it back; never leaves this module. */
class HandlerFailed {
  constructor(readonly error: TRPCError) {}
}

/**
 * Local mode, the key taken at commit (`claim: 'at-commit'`, local mode's default): read the key;
 * a stored outcome is replayed from that one statement. A free key runs the handler in a
 * transaction whose last statement inserts the record, sent with the COMMIT
 * (`store.commitWithRecord`); the unique index decides between concurrent duplicates, and the
 * loser, rolled back, answers with the winner's outcome. The timeline is in the store's
 * `commitStatements.ts`. Anything else the key holds (work in progress, a released key, a closed
 * replay window) goes to the claim-first path, which decides takeovers and supersedes.
 */
export async function executeAtCommit(
  job: IdemJob,
  claimFirst: (job: IdemJob) => Promise<NextResult>,
): Promise<NextResult> {
  // One request per key at a time in this process: a duplicate that arrives while another
  // request of this process runs the key waits for it (at most lockTimeoutMs, as it would behind
  // a claim), then reads the key and replays. Without this, a burst of duplicates would all read
  // "free" before the first commits and each run its handler to roll it back. Duplicates in other
  // processes are still decided by the unique index (commitStatements.ts).
  const { inFlight } = job.runtime;
  const key = `${job.claim.scope}\u0000${job.claim.procedure}\u0000${job.claim.keyHash}`;
  const deadline = Date.now() + job.options.lockTimeoutMs;
  for (let leader = inFlight.get(key); leader; leader = inFlight.get(key)) {
    if (!(await settlesBefore(leader, deadline)))
      throw inProgress(job.runtime.inProgressRetryAfterMs);
    // Every waiter reads at once; only a key the leader left unsettled needs another leader.
    const live = await readKey(job);
    if (live !== null && settledOutcome(live)) return answerExisting(job, live);
  }
  const running = runKey(job, claimFirst);
  inFlight.set(key, running);
  try {
    return await running;
  } finally {
    if (inFlight.get(key) === running) inFlight.delete(key);
  }
}

/** Whether `leader` settles (either way) before `deadline` (epoch ms). */
async function settlesBefore(leader: Promise<unknown>, deadline: number): Promise<boolean> {
  const wait = deadline - Date.now();
  if (wait <= 0) return false;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<false>((resolve) => (timer = setTimeout(resolve, wait, false)));
  try {
    return await Promise.race([leader.then(yes, yes), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}
const yes = () => true as const;

/** The key's one request in this process: read, then run at commit or answer (see above). */
async function runKey(
  job: IdemJob,
  claimFirst: (job: IdemJob) => Promise<NextResult>,
): Promise<NextResult> {
  // Every request reads its key before the handler may run, whatever the client says about it
  // (`Idempotency-Attempt` is the client's count, not a fact about the key: a reload, a second
  // tab or an old client sends 1 for a key that is stored). So a stored outcome never runs the
  // handler again; only duplicates that read the key before any of them committed each run,
  // and all but one roll back (in this process they wait for the first instead: see above).
  const live = await readKey(job);
  if (live !== null) return settledOutcome(live) ? answerExisting(job, live) : claimFirst(job);

  const { store } = job.runtime;
  const started = Date.now();
  // Chosen before the handler runs (prepareJob): it sees its operation id as in any other mode.
  const { operationId } = job.claim;
  let outcome;
  try {
    outcome = await store.commitWithRecord(async (tx) => {
      const { execution } = job;
      // Written out rather than spread from `job.execution` (once per request: V8 builds a
      // literal of one shape fastest; in a CPU profile the spread took its slow path).
      const result = await job.next({
        protected: true,
        keyHash: execution.keyHash,
        scope: execution.scope,
        procedure: execution.procedure,
        requestId: execution.requestId,
        clientAttempt: execution.clientAttempt,
        remainingMs: execution.remainingMs,
        operationId,
        executions: 1,
        tx,
      });
      if (!result.ok) throw new HandlerFailed(result.error);
      const body = storedOutput(job, result.data);
      if (typeof body !== 'string') throw new HandlerFailed(body);
      const response = { status: 200, body };
      return { value: result, record: outcomeRecord(job, operationId, 'COMPLETED', response) };
    });
  } catch (error) {
    if (error instanceof HandlerFailed)
      return recordFailure(job, error.error, operationId, started);
    throw storeUnavailable(error);
  }
  switch (outcome.kind) {
    case 'recorded':
      emitExecuted(job, operationId, 'completed', false, started);
      return outcome.value;
    case 'busy':
      // Another transaction's uncommitted row held the key past lockTimeoutMs.
      emitExecuted(job, null, 'rolled-back', false, started);
      throw inProgress(job.runtime.inProgressRetryAfterMs);
    case 'taken': {
      // A concurrent request's record committed first: ours rolled back; answer with theirs.
      emitExecuted(job, null, 'rolled-back', false, started);
      const winner = await readKey(job);
      return winner !== null && settledOutcome(winner)
        ? answerExisting(job, winner)
        : claimFirst(job);
    }
  }
}

/** What the key's live row answers with (a replay's one statement), timed and traced as the claim. */
async function readKey(job: IdemJob): Promise<KeyAnswer | null> {
  try {
    return await timedClaim(job, () => job.runtime.store.readAnswer(job.claim));
  } catch (error) {
    throw storeUnavailable(error);
  }
}

function outcomeRecord(
  job: IdemJob,
  operationId: string,
  state: OutcomeRecord['state'],
  response: Pick<StoredResponse, 'status' | 'body'>,
): OutcomeRecord {
  const { claim, options } = job;
  return {
    scope: claim.scope,
    procedure: claim.procedure,
    keyHash: claim.keyHash,
    fingerprint: claim.fingerprint,
    fingerprintVersion: claim.fingerprintVersion,
    operationId,
    state,
    response: {
      status: response.status,
      body: response.body,
      replayWindowMs: options.replayWindowMs,
      retentionMs: options.retentionMs,
    },
    lockTimeoutMs: options.lockTimeoutMs,
  };
}

/**
 * The handler failed and its transaction rolled back. A deterministic failure is stored for
 * replay in one statement of its own, unless the key has a live row by now (a concurrent
 * request's outcome committed): then that outcome is the key's, and the answer. A transient
 * failure leaves nothing, so a retry runs again; a settled outcome the key holds by now is the
 * answer in its place (see the race below).
 */
async function recordFailure(
  job: IdemJob,
  error: TRPCError,
  operationId: string,
  started: number,
): Promise<NextResult> {
  const failure = classifyHandlerFailure(error, job.options.failures);
  const failed: NextResult = { ok: false, error, marker: trpcMiddlewareMarker };
  if (failure.kind === 'transient') {
    // Nothing of this request is stored, but the key may hold an outcome by now, and then that
    // outcome is the answer, not this run's failure: a concurrent request of another process,
    // which read the key free as this one did, committed first, and this handler failed on its
    // writes (it waited on their row lock, then met a unique business key: 23505 as a 500, or
    // the handler's own 409). A retry would replay that outcome; answering it now spares the
    // client a failure for an operation that happened. Without a settled outcome it stands.
    let winner: KeyAnswer | null = null;
    try {
      winner = await timedClaim(job, () => job.runtime.store.readAnswer(job.claim));
    } catch {
      // The store is unreachable: the handler's transient failure is still the answer.
    }
    if (winner !== null && settledOutcome(winner)) {
      emitExecuted(job, null, 'rolled-back', false, started);
      return answerExisting(job, winner);
    }
    emitExecuted(job, null, 'released', false, started);
    return failed;
  }
  const response = { status: failure.status, body: serializeFailure(error) };
  let stored: boolean;
  try {
    stored = await job.runtime.store.insertOutcome(
      outcomeRecord(job, operationId, 'TERMINAL_FAILURE', response),
    );
  } catch (storeError) {
    // The failure is still the answer; it just will not be replayed. The retry runs again.
    job.runtime.emit({ ...job.event, type: 'store-error', operationId: null, error: storeError });
    return failed;
  }
  if (stored) {
    emitExecuted(job, operationId, 'failed', false, started);
    // Answered exactly as every replay will be.
    return { ok: false, error: storedFailureError(error), marker: trpcMiddlewareMarker };
  }
  emitExecuted(job, null, 'rolled-back', false, started);
  const winner = await readKey(job);
  return winner !== null && settledOutcome(winner) ? answerExisting(job, winner) : failed;
}
