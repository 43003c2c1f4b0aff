#!/usr/bin/env node
/**
 * The product speaks of itself alone: no file idem tracks mentions a work session or an issue
 * number of ours ("session", "issue" and their plurals followed by a number, "issue-" and a
 * number), and none promises what idem never promises ("exactly" then "once", with a space or a
 * hyphen). git keeps the history; a reference to another project's issue is written
 * `owner/repo#123`, which this check allows.
 *
 * Usage: `node scripts/check-product-words.mjs` checks every file `git ls-files` lists but
 * pnpm-lock.yaml and binary files (a NUL byte in the first 8000 bytes, as git decides);
 * `node scripts/check-product-words.mjs <file>...` checks those files only (a self-check).
 * Prints `file:line: words` for each finding and exits 1 when there is one; no dependencies.
 */
import { execFileSync } from 'node:child_process';
import { lstatSync, readFileSync } from 'node:fs';
import { relative } from 'node:path';

// A phrase may wrap onto the next line, behind a comment's leader (`//`, ` * `, `#`).
const gap = String.raw`(?:[ \t]+|[ \t]*\r?\n[ \t]*(?:\/\/+|\*|#+)?[ \t]*)`;
const RULES = [
  { name: 'a work session', pattern: String.raw`\bsessions?${gap}[0-9]+` },
  { name: 'an issue number', pattern: String.raw`\bissues?${gap}[0-9]+` },
  { name: 'an issue number', pattern: String.raw`\bissue-[0-9]+` },
  { name: 'a promise idem never makes', pattern: String.raw`\bexactly(?:-|${gap})once\b` },
].map((rule) => ({ ...rule, regex: new RegExp(rule.pattern, 'gi') }));

const SKIPPED = new Set(['pnpm-lock.yaml']);

/** The files to check, as paths to print and paths to read. */
function filesToCheck(args) {
  if (args.length > 0) return args.map((path) => ({ shown: path, path }));
  const root = execFileSync('git', ['rev-parse', '--show-toplevel'], { encoding: 'utf8' }).trim();
  const listed = execFileSync('git', ['ls-files', '-z'], {
    cwd: root,
    encoding: 'utf8',
    maxBuffer: 64 * 2 ** 20,
  });
  return listed
    .split('\0')
    .filter((path) => path !== '' && !SKIPPED.has(path.split('/').at(-1)))
    .map((path) => ({ shown: path, path: relative(process.cwd(), `${root}/${path}`) || '.' }));
}

/**
 * The text of a regular file; null for a binary one, and for what git lists but is no regular
 * file in the work tree (deleted, a symlink, a submodule). A path given as an argument must be a
 * regular file: anything else is a usage error.
 */
function readText(path, { given }) {
  let stat = null;
  try {
    stat = lstatSync(path);
  } catch {
    // handled below
  }
  if (!stat?.isFile()) {
    if (!given) return null;
    console.error(`check-product-words: ${path} is not a file (usage: [file...])`);
    process.exit(2);
  }
  const bytes = readFileSync(path);
  if (bytes.subarray(0, 8000).includes(0)) return null;
  return bytes.toString('utf8');
}

/** Every finding in `text`: its 1-based line and the words that matched. */
function findingsIn(text) {
  const found = [];
  for (const rule of RULES) {
    for (const match of text.matchAll(rule.regex)) {
      const line = text.slice(0, match.index).split('\n').length;
      found.push({ line, words: match[0].replace(/\s+/g, ' '), rule: rule.name });
    }
  }
  return found.sort((a, b) => a.line - b.line);
}

const args = process.argv.slice(2);
let findings = 0;
let files = 0;
for (const { shown, path } of filesToCheck(args)) {
  const text = readText(path, { given: args.length > 0 });
  if (text === null) continue;
  files++;
  for (const { line, words, rule } of findingsIn(text)) {
    findings++;
    console.log(`${shown}:${line}: "${words}" (${rule})`);
  }
}
if (findings > 0) {
  console.error(
    `\n${findings} finding(s): the product speaks of itself alone (CONTRIBUTING.md). ` +
      'Say the rule and the fact that justifies it; cite another project as owner/repo#123.',
  );
  process.exit(1);
}
console.log(`product words: ${files} file(s) checked, nothing found`);
