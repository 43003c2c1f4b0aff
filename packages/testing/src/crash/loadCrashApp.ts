import type { AnyTRPCRouter } from '@trpc/server';
import type { IdemTestApp } from '../app/defineIdemTestApp.js';

/** Whether `value` is an app made with `defineIdemTestApp`. */
function isIdemTestApp(value: unknown): value is IdemTestApp<AnyTRPCRouter> {
  const definition = (value as { definition?: { create?: unknown } } | null)?.definition;
  return typeof definition?.create === 'function';
}

/**
 * Imports the user's app module and picks its app definition: the export `exportName`, else the
 * default export, else the only export that is one. Fails naming the fix.
 */
export async function loadCrashApp(
  url: string,
  exportName?: string,
): Promise<IdemTestApp<AnyTRPCRouter>> {
  const module = (await import(url)) as Record<string, unknown>;
  if (exportName !== undefined) {
    const value = module[exportName];
    if (isIdemTestApp(value)) return value;
    throw new TypeError(
      `@idem/testing: crash points: the export "${exportName}" of ${url} is not an app made with defineIdemTestApp`,
    );
  }
  if (isIdemTestApp(module.default)) return module.default;
  const apps = Object.entries(module).filter(([, value]) => isIdemTestApp(value));
  if (apps.length === 1) return apps[0]![1] as IdemTestApp<AnyTRPCRouter>;
  throw new TypeError(
    apps.length === 0
      ? `@idem/testing: crash points: ${url} exports no app made with defineIdemTestApp: export one (export default defineIdemTestApp(...))`
      : `@idem/testing: crash points: ${url} exports several apps (${apps.map(([name]) => name).join(', ')}): pass exportName`,
  );
}
