import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { auditRouter, type RouterAudit } from '@idem/server/operator';
import { AdminInputError } from './AdminInputError.js';
import type { AnyTRPCRouter } from '@trpc/server';

/** What `idem-admin audit <module>` found. */
export interface ModuleAudit extends RouterAudit {
  /** The module file audited. */
  module: string;
  /** The export that held the router. */
  exportName: string;
}

const isRouter = (value: unknown): value is AnyTRPCRouter =>
  typeof value === 'object' &&
  value !== null &&
  (value as { _def?: { router?: unknown } })._def?.router === true;

/**
 * Imports a module (TypeScript too: the CLI runs under tsx) and audits the tRPC router it exports:
 * the export named `exportName` if given, else `appRouter`, `router` or the default export, else
 * its only router export. Point it at a module that builds the router without starting a server.
 */
export async function auditModule(
  file: string,
  exportName?: string,
  cwd: string = process.cwd(),
): Promise<ModuleAudit> {
  const path = resolve(cwd, file);
  if (!existsSync(path)) throw new AdminInputError(`no module at ${path}`);
  const exports = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
  const routers = Object.entries(exports).filter(([, value]) => isRouter(value));
  const chosen = exportName
    ? routers.find(([name]) => name === exportName)
    : (routers.find(([name]) => name === 'appRouter') ??
      routers.find(([name]) => name === 'router') ??
      routers.find(([name]) => name === 'default') ??
      (routers.length === 1 ? routers[0] : undefined));
  if (!chosen) {
    const found = routers.map(([name]) => name).join(', ') || 'none';
    throw new AdminInputError(
      exportName
        ? `${path} has no router export named ${exportName} (router exports: ${found})`
        : `${path}: name the router with --export (router exports: ${found})`,
    );
  }
  const [name, router] = chosen as [string, AnyTRPCRouter];
  return { module: path, exportName: name, ...(await auditRouter(router)) };
}
