/**
 * What stops one call of the retry loop early: the caller's `AbortSignal`, if it gave one, or
 * `stop()` (the link calls it when tRPC unsubscribes from a call that has not settled).
 *
 * It does the one thing the loop needs of an AbortController, without one per call: in the
 * bench's profile of the link (32 concurrent calls), the per-call AbortController, its signal and
 * the listener each attempt added to and removed from it cost about 13 µs of a call's 60 over
 * httpLink. The loop listens through {@link onStop} (one listener at a time: the running
 * attempt's); a clock's `sleep` gets a real signal, made by {@link signal} only when a retry sleeps.
 */
export class CallStop {
  /** Whether the call was stopped; {@link reason} says why. */
  aborted = false;
  reason: unknown = undefined;
  private listener: ((reason: unknown) => void) | undefined = undefined;
  private controller: AbortController | undefined = undefined;
  private readonly caller: AbortSignal | null | undefined;
  private readonly onCallerAbort: (() => void) | undefined;

  /** `caller`: the caller's signal, followed until {@link dispose}. */
  constructor(caller?: AbortSignal | null) {
    this.caller = caller;
    if (!caller) return;
    if (caller.aborted) {
      this.aborted = true;
      this.reason = caller.reason;
      return;
    }
    this.onCallerAbort = () => this.stop(caller.reason);
    caller.addEventListener('abort', this.onCallerAbort, { once: true });
  }

  /** Stops the call with `reason` (the first reason wins); calls the listener, then aborts {@link signal}. */
  stop(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listener = this.listener;
    this.listener = undefined;
    listener?.(reason);
    this.controller?.abort(reason);
  }

  /**
   * Calls `listener` once, when the call stops; `undefined` removes it. One listener at a time: a
   * new one replaces the last.
   */
  onStop(listener: ((reason: unknown) => void) | undefined): void {
    this.listener = listener;
  }

  /** An AbortSignal that aborts when the call stops (already aborted if it has), made on first use. */
  signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  /** Stops following the caller's signal (the call has settled). */
  dispose(): void {
    if (this.onCallerAbort) this.caller?.removeEventListener('abort', this.onCallerAbort);
  }
}
