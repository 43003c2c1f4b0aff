/** The Usage extractor on small READMEs: names, variants, and the programs they make. */
import { describe, expect, it } from 'vitest';
import { usageBlocks, usageProgram, usageVariants } from './usageBlocks.js';

const fence = '```';
const readme = (...blocks: string[]) =>
  [
    '# app',
    '## Usage',
    ...blocks.map((text) => `${fence}ts\n${text}\n${fence}`),
    '## Documentation',
    `${fence}ts\n// later.ts\n${fence}`,
  ].join('\n\n') + '\n';

describe('usageBlocks', () => {
  it('names blocks by their first line, with an optional variant, inside Usage only', () => {
    const text = readme(
      '// db.ts (postgres.js): the driver\nexport const db = 1;',
      '// router.ts\nexport {};',
      'const unnamed = 1;',
      '// db.ts (pg): instead\nexport const db = 2;',
    );
    expect(usageBlocks(text).map(({ file, variant }) => [file, variant])).toEqual([
      ['db.ts', 'postgres.js'],
      ['router.ts', undefined],
      ['db.ts', 'pg'],
    ]);
    expect(usageVariants(text)).toEqual(['postgres.js', 'pg']);
    expect(usageProgram(text, 'pg')).toEqual({
      'db.ts': '// db.ts (pg): instead\nexport const db = 2;\n',
      'router.ts': '// router.ts\nexport {};\n',
    });
  });

  it.each([
    ['two blocks of one name', ['// a.ts\n1', '// a.ts: again\n2'], /two blocks named a\.ts/],
    ['a variant asked for and missing', ['// db.ts (pg)\n1'], /no db\.ts for postgres\.js/],
    ['a file both plain and varied', ['// db.ts\n1', '// db.ts (pg)\n2'], /both plain/],
  ])('refuses %s', (_, blocks, error) => {
    expect(() => usageProgram(readme(...blocks), 'postgres.js')).toThrow(error);
  });
});
