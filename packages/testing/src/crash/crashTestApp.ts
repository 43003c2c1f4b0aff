import type { Completer } from '@idem/server';
import type { AnyTRPCRouter } from '@trpc/server';
import type { IdemTestAppInstance } from '../app/defineIdemTestApp.js';

/**
 * What the crash points gate reads besides `{ router, createContext }` from what your factory
 * returns: how to build your completer, which finishes work a crash abandoned.
 *
 * @example
 * create: ({ db, store }) => {
 *   const idem = createIdempotency({ store, keySecret, scope: (ctx) => ctx.accountId });
 *   const router = createRouter(idem, db);
 *   return {
 *     router,
 *     createContext: ({ caller }) => ({ accountId: caller }),
 *     completer: () => idem.completer({ router, createContext: (record) => ({ accountId: record.scope }) }),
 *   };
 * }
 */
export interface CrashTestAppInstance {
  /**
   * Builds your completer (`idem.completer({ router, createContext })`). Required by the crash
   * points gate unless it runs with `completer: false`.
   */
  completer?(): Completer;
}

/** The completer builder of an instance, or undefined. */
export function completerOf(
  instance: IdemTestAppInstance<AnyTRPCRouter> | undefined,
): (() => Completer) | undefined {
  const completer = (instance as CrashTestAppInstance | undefined)?.completer;
  return typeof completer === 'function' ? completer.bind(instance) : undefined;
}
