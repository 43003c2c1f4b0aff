import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

/** A V8 CPU profiler of the calling process (the main thread), through the inspector. */
export interface CpuProfiler {
  /** Starts profiling; a profile already running is discarded (its samples are not written). */
  start(): Promise<void>;
  /** Stops profiling and writes the profile (Chrome DevTools' `.cpuprofile`) to `file`. */
  stop(file?: string): Promise<{ file: string }>;
  readonly running: boolean;
}

/**
 * A profiler that writes to `defaultFile` unless told otherwise, sampling every `intervalUs`
 * microseconds (V8's default, 1000, when not given). It is not started: call `start()`.
 */
export function createCpuProfiler(defaultFile: string, intervalUs?: number): CpuProfiler {
  const session = new Session();
  session.connect();
  const post = <T>(method: string, params?: object) =>
    new Promise<T>((resolve, reject) =>
      session.post(method, params ?? {}, (error, result) =>
        error ? reject(error) : resolve(result as T),
      ),
    );
  let running = false;
  let enabled = false;
  return {
    get running() {
      return running;
    },
    async start() {
      if (!enabled) {
        await post('Profiler.enable');
        enabled = true;
      }
      if (running) await post('Profiler.stop');
      running = false;
      // Only allowed while the profiler is stopped.
      if (intervalUs !== undefined)
        await post('Profiler.setSamplingInterval', { interval: intervalUs });
      await post('Profiler.start');
      running = true;
    },
    async stop(file = defaultFile) {
      if (!running) throw new Error('the CPU profiler is not running');
      const { profile } = await post<{ profile: unknown }>('Profiler.stop');
      running = false;
      writeFileSync(file, JSON.stringify(profile));
      return { file };
    },
  };
}
