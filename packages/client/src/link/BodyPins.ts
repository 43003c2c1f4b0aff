import { REQUEST_ID_HEADER } from '@idem/contract';
import type { IdemFetch } from './idemFetch.js';

type Body = NonNullable<Parameters<IdemFetch>[1]>['body'];

/**
 * One call's body, pinned at its first send (made per call). A retry sends `body`, never a body
 * made again from the caller's input object.
 */
export class CallBody {
  /** Whether a request of this call reached `fetch`: from then on `body` is what it sent. */
  sent = false;
  body: Body = undefined;
  /** The request id of this call's attempt that is registered and has not reached `fetch` yet. */
  pending: string | undefined = undefined;
}

/**
 * Every attempt of one idempotent call sends the same body, byte for byte (per client).
 *
 * tRPC's httpLink serializes `op.input` again for every attempt, and `op.input` is the caller's
 * object: a caller that edits it while the call is pending (a reactive form, during a backoff)
 * would make a retry send another body under the same key, which the server answers 422
 * `IDEMPOTENCY_KEY_REUSED` (for an order that may well exist), or which runs the edited input
 * under the old intent's key. So the body the first request of a call hands to `fetch` is kept,
 * and every later request of the call sends it instead of the body tRPC made again.
 *
 * Why the bytes, and not a copy of the input or a comparison:
 * - the first request is sent exactly as today (nothing copied, nothing made twice), and no retry
 *   can differ from it, whatever the transformer: the bytes are the transformer's own output;
 * - a copy of the input (`structuredClone`) loses class prototypes, so with superjson and custom
 *   classes it would change what is sent; a copy made with the transformer and JSON costs one
 *   more serialization per call on the link's hot path, and duplicates tRPC's body rules;
 * - comparing the retry's body with the first and failing the call would turn a retry that can
 *   succeed into an error whose first attempt may or may not have taken effect.
 * The retry answers the call the caller made: its input as it was when the call was sent. The
 * cost is a map entry per attempt; a string body (tRPC's JSON) is kept as it is, and a mutable
 * binary body (`Uint8Array`, `FormData`) is copied once per call. Headers are still made per
 * attempt (the attempt number, the request id and the time left change); only the body is pinned.
 *
 * An attempt is matched to its call by its `X-Request-Id`, fresh for every attempt: the link
 * registers it ({@link expect}) before handing the attempt to httpLink, and httpLink passes the
 * link's headers on to `fetch`.
 */
export class BodyPins {
  readonly #waiting = new Map<string, CallBody>();

  /** The attempt `requestId` of `call` is about to be sent. */
  expect(call: CallBody, requestId: string): void {
    if (call.pending !== undefined) this.#waiting.delete(call.pending);
    call.pending = requestId;
    this.#waiting.set(requestId, call);
  }

  /** The call is over: forgets an attempt of it that never reached `fetch`. */
  release(call: CallBody): void {
    if (call.pending === undefined) return;
    this.#waiting.delete(call.pending);
    call.pending = undefined;
  }

  /** Registered attempts not yet sent (for tests: none once every call is over). */
  get size(): number {
    return this.#waiting.size;
  }

  /** Wraps `inner`: the first request of a call pins its body, later ones send that body. */
  fetch(inner: IdemFetch): IdemFetch {
    return (input, init) => {
      const requestId = init && headerValue(init.headers, REQUEST_ID_HEADER);
      const call = requestId === undefined ? undefined : this.#waiting.get(requestId);
      if (call === undefined || requestId === undefined || init === undefined) {
        return inner(input, init);
      }
      this.#waiting.delete(requestId);
      if (call.pending === requestId) call.pending = undefined;
      if (!call.sent) {
        call.sent = true;
        call.body = kept(init.body);
        return inner(input, init);
      }
      return inner(input, { ...init, body: call.body } as typeof init);
    };
  }
}

/**
 * A body that nothing can change after this point: strings, `Blob`s and `File`s are immutable;
 * a `Uint8Array` or a `FormData` is copied (the first request still sends the caller's own).
 */
function kept(body: Body): Body {
  if (body instanceof Uint8Array) return body.slice();
  if (typeof FormData !== 'undefined' && body instanceof FormData) {
    const copy = new FormData();
    for (const [name, value] of body) copy.append(name, value);
    return copy;
  }
  return body;
}

/** A header of `fetch`'s init in any of the forms tRPC and `fetch` allow. */
function headerValue(headers: unknown, name: string): string | undefined {
  if (headers === null || typeof headers !== 'object') return undefined;
  if (typeof (headers as Headers).get === 'function') {
    return (headers as Headers).get(name) ?? undefined;
  }
  const lower = name.toLowerCase();
  if (Array.isArray(headers)) {
    for (const [key, value] of headers as [string, string][]) {
      if (key.toLowerCase() === lower) return value;
    }
    return undefined;
  }
  const record = headers as Record<string, unknown>;
  const exact = record[name];
  if (typeof exact === 'string') return exact;
  for (const key of Object.keys(record)) {
    if (key.toLowerCase() === lower && typeof record[key] === 'string') return record[key];
  }
  return undefined;
}
