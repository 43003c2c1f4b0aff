/**
 * The folders of src/ are floors: a file imports from its own folder or from a lower floor, never
 * from a higher one, and no chain of imports comes back to where it started. Tests are exempt:
 * a type test of the lockstep goes through idemLink on purpose.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/** Lowest first. Folders on one floor do not import each other. */
const FLOORS: readonly (readonly string[])[] = [
  ['types'],
  ['errors', 'telemetry'],
  ['retry', 'keys'],
  ['operations'],
  ['link'],
  ['.'], // index.ts, the front door
];

const src = dirname(fileURLToPath(import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !/\.test(-d)?\.ts$/.test(entry.name) ? [path] : [];
  });
}

/** Relative imports and re-exports of `file`, as absolute `.ts` paths. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/\bfrom\s+'(\.{1,2}\/[^']+)'/g)].map((match) =>
    resolve(dirname(file), match[1]!).replace(/\.js$/, '.ts'),
  );
}

const folderOf = (file: string) => {
  const parts = relative(src, file).split(sep);
  return parts.length > 1 ? parts[0]! : '.';
};
const floorOf = (folder: string) => FLOORS.findIndex((floor) => floor.includes(folder));
const shown = (file: string) => relative(src, file).split(sep).join('/');

const files = sourceFiles(src);
const graph = new Map(files.map((file) => [file, importsOf(file)]));

describe('src/ floors', () => {
  it('puts every folder on a floor', () => {
    expect(files.map(folderOf).filter((folder) => floorOf(folder) < 0)).toEqual([]);
  });

  it('imports only from the same folder or a lower floor', () => {
    const upward = [...graph].flatMap(([file, imports]) =>
      imports
        .filter((target) => {
          const from = folderOf(file);
          const to = folderOf(target);
          return from !== to && floorOf(to) >= floorOf(from);
        })
        .map((target) => `${shown(file)} -> ${shown(target)}`),
    );
    expect(upward).toEqual([]);
  });

  it('has no import cycle', () => {
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const visit = (file: string, path: string[]) => {
      state.set(file, 'open');
      const here = [...path, file];
      for (const target of graph.get(file) ?? []) {
        if (state.get(target) === 'open') {
          cycles.push([...here.slice(here.indexOf(target)), target].map(shown).join(' -> '));
        } else if (!state.has(target)) {
          visit(target, here);
        }
      }
      state.set(file, 'done');
    };
    for (const file of files) if (!state.has(file)) visit(file, []);
    expect(cycles).toEqual([]);
  });

  it('names every public name at the front door (no export *)', () => {
    expect(readFileSync(join(src, 'index.ts'), 'utf8')).not.toMatch(/export\s+(type\s+)?\*/);
  });
});
