import type { IdemTestAnswer } from '../app/IdemTestAnswer.js';

/** The gates of the kit, by name. */
export type IdemGateName = 'concurrency' | 'mismatch' | 'scope' | 'replay' | 'failure' | 'clock';

/** What a failed gate says: which gate, what it expected, what happened, and why it may be. */
export interface IdemGateFinding {
  gate: IdemGateName;
  /** The procedure path the gate ran. */
  path: string;
  expected: string;
  actual: string;
  /** The likely cause, phrased as what to look at in your code. */
  likelyCause: string;
  /** The answers the gate saw, in the order it sent the requests. */
  answers: readonly IdemTestAnswer[];
}

/**
 * A gate found a procedure that breaks idem's guarantee. Its message names the gate, what was
 * expected, what happened and the likely cause; its fields carry the same for a test to read.
 * Check it with {@link isIdemGateError} (a brand, so it survives two installed copies).
 */
export class IdemGateError extends Error implements IdemGateFinding {
  readonly isIdemGateError = true;
  readonly gate: IdemGateName;
  readonly path: string;
  readonly expected: string;
  readonly actual: string;
  readonly likelyCause: string;
  readonly answers: readonly IdemTestAnswer[];

  constructor(finding: IdemGateFinding) {
    super(formatFinding(finding));
    this.name = 'IdemGateError';
    this.gate = finding.gate;
    this.path = finding.path;
    this.expected = finding.expected;
    this.actual = finding.actual;
    this.likelyCause = finding.likelyCause;
    this.answers = finding.answers;
  }
}

/** Whether `error` is an {@link IdemGateError} (from any installed copy of the kit). */
export function isIdemGateError(error: unknown): error is IdemGateError {
  return (
    typeof error === 'object' &&
    error !== null &&
    (error as { isIdemGateError?: unknown }).isIdemGateError === true
  );
}

function formatFinding(finding: IdemGateFinding): string {
  const lines = [
    `idem ${finding.gate} gate failed for ${finding.path}`,
    `  expected: ${finding.expected}`,
    `  got:      ${finding.actual}`,
    `  likely:   ${finding.likelyCause}`,
  ];
  if (finding.answers.length > 0) {
    lines.push('  answers:');
    for (const [index, answer] of finding.answers.entries()) {
      lines.push(`    ${index + 1}. ${describeAnswer(answer)}`);
    }
  }
  return lines.join('\n');
}

/** One answer in a line: `server 1: 200 replayed {"result":...}`. */
export function describeAnswer(answer: IdemTestAnswer): string {
  const what = [
    String(answer.status),
    answer.replayed ? 'replayed' : null,
    answer.reason,
    answer.message !== null && answer.reason === null ? JSON.stringify(answer.message) : null,
  ].filter((part) => part !== null);
  return `server ${answer.server}: ${what.join(' ')} ${excerpt(answer.text)}`;
}

/** Answers counted by kind: `200 ×1, 200 replayed ×6, 409 IDEMPOTENCY_REQUEST_IN_PROGRESS ×1`. */
export function tallyAnswers(answers: readonly IdemTestAnswer[]): string {
  const counts = new Map<string, number>();
  for (const answer of answers) {
    const kind = [answer.status, answer.replayed ? 'replayed' : null, answer.reason]
      .filter((part) => part !== null)
      .join(' ');
    counts.set(kind, (counts.get(kind) ?? 0) + 1);
  }
  return [...counts].map(([kind, count]) => `${kind} ×${count}`).join(', ');
}

/** The start of a body, for a message. */
export function excerpt(text: string, max = 160): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length} characters)`;
}

/** Where two bodies part: `at character 41: "…2026-12-02T19:55" vs "…2026-12-02T19:56"`. */
export function firstDifference(a: string, b: string): string {
  let at = 0;
  while (at < a.length && at < b.length && a[at] === b[at]) at++;
  const from = Math.max(0, at - 24);
  const show = (text: string) => JSON.stringify(text.slice(from, at + 24));
  return `at character ${at}: ${show(a)} vs ${show(b)}`;
}
