/**
 * The README's Usage program, as its ```ts blocks hold it. A block is named by its first line:
 * `// router.ts` (optionally followed by `: a comment`), or `// db.ts (pg)` for one variant of a
 * file that differs between variants (here: the database driver). A program is every block without
 * a variant plus, for each file that has variants, the block of the variant asked for.
 */

/** One ```ts block of the Usage section. */
export interface UsageBlock {
  /** The file name on its first line: `server.ts`. */
  file: string;
  /** The variant in parentheses after the name (`pg` in `// db.ts (pg)`), if any. */
  variant: string | undefined;
  /** The block's text, first line included, as a file's content. */
  text: string;
}

const NAME_LINE = /^\/\/ ([\w.-]+\.ts)(?: \(([^)]+)\))?(?=[:\s])/;

/** The Usage section of the README: from `## Usage` to the next `## ` heading. */
function usageSection(readme: string): string {
  const start = readme.indexOf('\n## Usage\n');
  if (start === -1) throw new Error('README.md has no "## Usage" section');
  const end = readme.indexOf('\n## ', start + 1);
  return readme.slice(start, end === -1 ? undefined : end);
}

/** The named ```ts blocks of the Usage section, in order; a block with no name is left out. */
export function usageBlocks(readme: string): UsageBlock[] {
  const blocks: UsageBlock[] = [];
  for (const match of usageSection(readme).matchAll(/^```ts\n([\s\S]*?)^```/gm)) {
    const text = match[1]!;
    const name = NAME_LINE.exec(text);
    if (!name) continue;
    const block = { file: name[1]!, variant: name[2], text };
    if (blocks.some((b) => b.file === block.file && b.variant === block.variant)) {
      const label = block.variant ? `${block.file} (${block.variant})` : block.file;
      throw new Error(`the README's Usage has two blocks named ${label}`);
    }
    blocks.push(block);
  }
  return blocks;
}

/** The variants the Usage offers (`['postgres.js', 'pg']`), in the order they first appear. */
export function usageVariants(readme: string): string[] {
  const variants = usageBlocks(readme).flatMap(({ variant }) => (variant ? [variant] : []));
  return [...new Set(variants)];
}

/**
 * The program's files, by name, for `variant`: every block without a variant, and each varying
 * file's block for `variant`. Throws when a varying file has no block for it, or when a file has
 * both a plain block and variants.
 */
export function usageProgram(readme: string, variant?: string): Record<string, string> {
  const blocks = usageBlocks(readme);
  const files: Record<string, string> = {};
  for (const file of new Set(blocks.map((b) => b.file))) {
    const ofFile = blocks.filter((b) => b.file === file);
    const plain = ofFile.find((b) => b.variant === undefined);
    if (plain && ofFile.length > 1) {
      throw new Error(`the README's Usage has ${file} both plain and as variants`);
    }
    const chosen = plain ?? ofFile.find((b) => b.variant === variant);
    if (!chosen) {
      const offered = ofFile.map((b) => b.variant).join(', ');
      throw new Error(`the README's Usage has no ${file} for ${variant} (it has: ${offered})`);
    }
    files[file] = chosen.text;
  }
  return files;
}
