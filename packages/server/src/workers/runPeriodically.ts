/** A background loop with a clean stop (configured once per worker). */
export interface PeriodicWorker {
  /** Starts running every `intervalMs`, the first run at once. Idempotent. */
  start(): void;
  /** Stops scheduling and waits for the run in flight, if any. */
  stop(): Promise<void>;
}

/**
 * Runs `run` every `intervalMs` (measured from the end of one run to the start of the next, so
 * runs never overlap). Errors go to `onError` and the loop goes on.
 */
export function runPeriodically(
  run: () => Promise<unknown>,
  intervalMs: number,
  onError: (error: unknown) => void,
): PeriodicWorker {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let inFlight: Promise<unknown> | undefined;
  let running = false;
  const tick = () => {
    inFlight = run()
      .catch(onError)
      .finally(() => {
        inFlight = undefined;
        if (running) timer = setTimeout(tick, intervalMs);
      });
  };
  return {
    start() {
      if (running) return;
      running = true;
      tick();
    },
    async stop() {
      running = false;
      if (timer) clearTimeout(timer);
      await inFlight;
    },
  };
}
