import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const src = fileURLToPath(new URL('../src/', import.meta.url));

/**
 * The bare modules an entry loads at run time, following its relative imports. `import type` and
 * `export type` are erased by the compiler and load nothing, so they are skipped.
 */
function runtimeImports(entry: string): Set<string> {
  const bare = new Set<string>();
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(/^(import|export)\s+(type\s)?[^;]*?from\s+'([^']+)'/gms)) {
      const [, , typeOnly, specifier] = match;
      if (typeOnly !== undefined || specifier === undefined) continue;
      if (specifier.startsWith('.'))
        visit(resolve(dirname(file), specifier.replace(/\.js$/, '.ts')));
      else bare.add(specifier);
    }
  };
  visit(resolve(src, entry));
  return bare;
}

const postgresJs = /^(postgres|drizzle-orm\/postgres-js(\/.*)?)$/;
const pglite = /^(@electric-sql\/pglite(\/.*)?|drizzle-orm\/pglite(\/.*)?)$/;

describe('entries load only their own driver', () => {
  it('the root entry loads no driver', () => {
    const imports = [...runtimeImports('index.ts')];
    expect(imports.filter((m) => postgresJs.test(m) || pglite.test(m))).toEqual([]);
    expect(imports).toContain('drizzle-orm');
  });

  it('the postgres-js entry never loads PGlite', () => {
    const imports = [...runtimeImports('postgres-js/index.ts')];
    expect(imports.filter((m) => pglite.test(m))).toEqual([]);
    expect(imports).toContain('drizzle-orm/postgres-js/migrator');
  });

  it('the pglite entry never loads postgres.js', () => {
    const imports = [...runtimeImports('pglite/index.ts')];
    expect(imports.filter((m) => postgresJs.test(m))).toEqual([]);
    expect(imports).toContain('drizzle-orm/pglite/migrator');
  });
});
