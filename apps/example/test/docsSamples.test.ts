/**
 * Every TypeScript sample in the docs (docs/*.md and the README, except the README's Usage, which
 * packages/tests runs as a program) appears in a file under
 * apps/example/docs-samples/, which `pnpm typecheck` compiles: a sample that no longer compiles,
 * or that was edited in the docs only, fails CI. The shell samples are run by contract.test.ts.
 *
 * Comparison ignores whitespace (prettier may wrap a line differently in a file and in a code
 * block) and the samples' `// @ts-expect-error` lines, which mark known bugs in a docs sample
 * until the docs are fixed (then the unused directive fails the typecheck, so it cannot linger).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SERVER_METRICS } from '@idem/server';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const SAMPLES = fileURLToPath(new URL('../docs-samples', import.meta.url));

const docs = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];

/** The ```ts blocks of a markdown file, with the line each starts on. */
function tsBlocks(markdown: string): { line: number; code: string }[] {
  const blocks: { line: number; code: string }[] = [];
  for (const match of markdown.matchAll(/^```(?:ts|typescript)\n([\s\S]*?)^```/gm)) {
    blocks.push({ line: markdown.slice(0, match.index).split('\n').length, code: match[1]! });
  }
  return blocks;
}

function sampleFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sampleFiles(join(dir, entry.name))
      : entry.name.endsWith('.ts')
        ? [join(dir, entry.name)]
        : [],
  );
}

const normalize = (code: string) =>
  code
    .split('\n')
    .filter((line) => !/^\s*\/\/ @ts-expect-error/.test(line))
    .join('\n')
    .replace(/\s+/g, ' ')
    .trim();

const samples = sampleFiles(SAMPLES).map((file) => normalize(readFileSync(file, 'utf8')));

describe('every TypeScript sample in the docs is compiled from docs-samples/', () => {
  // The README's Usage blocks (first line `// server.ts`, `// client.ts`) are a whole program:
  // packages/tests/test/readmeUsage.test.ts installs, typechecks and runs them as they stand.
  const runAsProgram = (doc: string, code: string) =>
    doc === 'README.md' && /^\/\/ [\w.-]+\.ts\b/.test(code);
  const cases = docs.flatMap((doc) =>
    tsBlocks(readFileSync(join(ROOT, doc), 'utf8'))
      .filter(({ code }) => !runAsProgram(doc, code))
      .map((block) => ({ doc, ...block })),
  );

  it('finds the samples', () => {
    expect(cases.length).toBeGreaterThanOrEqual(6);
  });

  it.each(cases)('$doc, the sample on line $line', ({ code }) => {
    const wanted = normalize(code);
    expect(
      samples.some((sample) => sample.includes(wanted)),
      'copy the block into a file under apps/example/docs-samples/ (verbatim) and make it compile',
    ).toBe(true);
  });
});

describe('the docs say what is true', () => {
  const text = (doc: string) => readFileSync(join(ROOT, doc), 'utf8');

  it.each(Object.values(SERVER_METRICS))('docs/operations.md explains the metric %s', (name) => {
    expect(text('docs/operations.md')).toContain(`\`${name}\``);
  });

  it.each(docs)('%s never promises delivery once', (doc) => {
    // Retries are safe within the key scope and replay window; nothing more is promised.
    expect(text(doc)).not.toMatch(/exactly[- ]once/i);
  });
});
