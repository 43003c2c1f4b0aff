import {
  DEFAULT_LEASE_MS,
  DEFAULT_LOCK_TIMEOUT_MS,
  DEFAULT_REPLAY_WINDOW_MS,
  DEFAULT_RETENTION_MS,
  idempotencyOptionsSchema,
  type IdempotencyOptions,
} from '@idem/contract';
import type { IdemProcedureOptions, KeyRequirement } from '../types/options.js';
import { stepsNeedInputCipher } from '../phases/stepResultCodec.js';
import { checkedKeyRequirement, markKeysOptional } from './keyRequirement.js';
import { assertStatusLocation } from './statusLocation.js';
import type { IdemRuntime, ResolvedProcedureOptions } from '../types/IdemJob.js';

/**
 * One procedure's options with the app's defaults and idem's applied, checked once when the
 * procedure is built (per procedure): a misconfigured procedure fails at start-up, not per call.
 * Returns the merged options as they go into the procedure's meta, and their resolved form.
 */
export function resolveProcedureOptions(
  runtime: IdemRuntime,
  defaults: IdempotencyOptions,
  procedureOptions: IdemProcedureOptions,
  appKeys: KeyRequirement = 'required',
): { meta: IdempotencyOptions; resolved: ResolvedProcedureOptions } {
  const { replay = { kind: 'full' }, keys: procedureKeys, ...rest } = procedureOptions;
  const keys = checkedKeyRequirement(procedureKeys, 'idem.procedure()') ?? appKeys;
  const merged = idempotencyOptionsSchema.parse({ ...defaults, ...rest, replay: replay.kind });
  const resolved: ResolvedProcedureOptions = {
    mode: merged.mode ?? 'local',
    replayWindowMs: merged.replayWindowMs ?? DEFAULT_REPLAY_WINDOW_MS,
    retentionMs: merged.retentionMs ?? DEFAULT_RETENTION_MS,
    leaseMs: merged.leaseMs ?? DEFAULT_LEASE_MS,
    lockTimeoutMs: merged.lockTimeoutMs ?? DEFAULT_LOCK_TIMEOUT_MS,
    // The app's default timing is for its local procedures: external mode always claims first.
    claim: merged.mode === 'external' ? (rest.claim ?? 'first') : (merged.claim ?? 'at-commit'),
    failures: merged.failures ?? 'deterministic',
    scopeSuffix: merged.scopeSuffix,
    respond: merged.respond ?? 'result',
    replay,
    keys,
  };
  if (resolved.respond === 'accepted' && resolved.mode !== 'external') {
    throw new TypeError(
      "idem: respond: 'accepted' needs mode: 'external' (the work outlives the request)",
    );
  }
  if (resolved.respond === 'accepted' && keys === 'optional') {
    // A call without a key would have no operation to poll; and accepted work came with idem, so
    // no client without idem's link calls it.
    throw new TypeError(
      procedureKeys === 'optional'
        ? "idem: respond: 'accepted' needs a key on every call (a call without one has no operation to poll); remove keys: 'optional' from this procedure"
        : "idem: respond: 'accepted' needs a key on every call (a call without one has no operation to poll); the app's keys is 'optional', so set keys: 'required' on this procedure",
    );
  }
  if (resolved.respond === 'accepted') assertStatusLocation(runtime);
  if (resolved.mode === 'external' && resolved.claim === 'at-commit') {
    throw new TypeError(
      "idem: claim: 'at-commit' is for local mode; external mode always claims first (its claim commits before the work). Remove the claim option",
    );
  }
  if (resolved.retentionMs < resolved.replayWindowMs) {
    throw new TypeError(
      `idem: retentionMs (${resolved.retentionMs}) must be at least replayWindowMs (${resolved.replayWindowMs})`,
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
  if (keys === 'optional') markKeysOptional(merged);
  return { meta: merged, resolved };
}
