/**
 * Can every statement of the request path be routed to one shard when `idem_records` is sharded
 * by `scope` (Citus, docs/operations.md "Past one PostgreSQL primary")? A statement routes to one
 * shard when every reference to `idem_records` in it is pinned: a top-level conjunct of its WHERE
 * is `scope = <the request's scope>` or `id = <the record's id>` (an id routes only where the id
 * carries the scope; see the docs), or, for an INSERT, the inserted `scope` is the request's.
 *
 * The statements are not listed by hand: the store runs the request path on PGlite (every store
 * method a request or its phases call, through every branch of a claim), and Drizzle's logger
 * captures each statement with its parameters. A new statement on the request path is checked
 * as soon as a scenario below reaches it; to cover a new store method, add a scenario.
 *
 * The check is on the rendered SQL text (no EXPLAIN): references and predicates are found with
 * regular expressions, and a predicate counts only when no OR, and no NOT around it, stands
 * between it and its WHERE. The negative cases at the end show that it fails a statement that
 * lost its pin.
 */
import { PGlite } from '@electric-sql/pglite';
import type { ClaimInput, Fence } from '@idem/contract';
import { drizzle } from 'drizzle-orm/pglite';
import { describe, expect, it } from 'vitest';
import { createPgliteStore, migrate } from '../src/pglite/index.js';

interface Captured {
  sql: string;
  params: readonly unknown[];
}

/** Why `statement` cannot be routed to the shard of `scope` (or of record `ids`); [] when it can. */
export function routingProblems(
  statement: Captured,
  scope: string,
  ids: readonly string[],
): string[] {
  const text = statement.sql.replace(/\s+/g, ' ').toLowerCase();
  const paramIs = (n: string, wanted: readonly string[]) =>
    wanted.includes(String(statement.params[Number(n) - 1]));
  const problems: string[] = [];
  const references = [
    ...text.matchAll(
      /\b(from|update|into|join|using) "idem_records"(?: as "?([a-z_][a-z0-9_]*)"?)?/g,
    ),
  ];
  for (const reference of references) {
    const alias = reference[2] ?? 'idem_records';
    if (reference[1] === 'into') {
      if (
        !insertPinsScope(text, reference.index! + reference[0].length, (n) => paramIs(n, [scope]))
      )
        problems.push(`INSERT INTO idem_records without the request's scope as its scope value`);
      continue;
    }
    const predicate = new RegExp(
      `(?:"?${alias}"?\\.)?"?(scope|id)"? = \\$(\\d+)(?:::[a-z]+)?`,
      'g',
    );
    const pinned = [...text.matchAll(predicate)].some(
      (match) =>
        paramIs(match[2]!, match[1] === 'scope' ? [scope] : ids) &&
        isTopLevelConjunct(text, match.index!, match.index! + match[0].length),
    );
    if (!pinned)
      problems.push(`${reference[1]} idem_records as ${alias}: neither scope nor id pinned`);
  }
  if (references.length === 0) problems.push('no reference to idem_records');
  return problems;
}

/** The value inserted into `scope`, in `INSERT INTO idem_records [AS r] (cols) SELECT|VALUES ...`. */
function insertPinsScope(
  text: string,
  from: number,
  isScopeParam: (n: string) => boolean,
): boolean {
  const rest = text.slice(from);
  const columns = /^(?: as "?[a-z_]+"?)? \(([^)]*)\) (?:select|values \()\s*/.exec(rest);
  if (!columns) return false;
  const index = columns[1]!
    .split(',')
    .map((c) => c.trim().replaceAll('"', ''))
    .indexOf('scope');
  if (index < 0) return false;
  const values = splitTopLevel(rest.slice(columns[0].length));
  return (
    new RegExp(`^\\$(\\d+)(?:::[a-z]+)?$`).test(values[index] ?? '') &&
    isScopeParam(/\$(\d+)/.exec(values[index]!)![1]!)
  );
}

/** The comma-separated items at the start of `text`, up to a top-level FROM, ON or `)`. */
function splitTopLevel(text: string): string[] {
  const items: string[] = [];
  let depth = 0;
  let current = '';
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (depth === 0 && (/^ (from|on conflict)\b/.test(text.slice(i)) || ch === ')')) break;
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      items.push(current.trim());
      current = '';
    } else current += ch;
  }
  items.push(current.trim());
  return items;
}

/**
 * Whether the predicate at [start, end) is ANDed into its WHERE: walking out from it, no OR at
 * its level or any enclosing parenthesised level, and no NOT before an enclosing parenthesis,
 * until the clause starts (WHERE) and ends (a closing clause keyword or the statement's end).
 */
function isTopLevelConjunct(text: string, start: number, end: number): boolean {
  let depth = 0;
  for (let i = start - 1; i >= 0; i--) {
    const ch = text[i]!;
    if (ch === ')') depth++;
    else if (ch === '(') {
      if (depth > 0) depth--;
      else if (/\bnot\s*$/.test(text.slice(0, i))) return false;
    } else if (depth === 0) {
      const before = text.slice(0, i + 1);
      if (/\bor$/.test(before) && /\W/.test(text[i + 1] ?? ' ')) return false;
      if (/\bwhere$/.test(before)) break;
    }
  }
  depth = 0;
  for (let i = end; i < text.length; i++) {
    const ch = text[i]!;
    if (ch === '(') depth++;
    else if (ch === ')') {
      if (depth > 0) depth--;
    } else if (depth === 0) {
      const after = text.slice(i);
      if (/^or\b/.test(after) && /\W/.test(text[i - 1] ?? ' ')) return false;
      if (/^(returning|order by|limit|union|group by|for update)\b/.test(after)) break;
    }
  }
  return true;
}

const windows = { replayWindowMs: 60_000, retentionMs: 120_000 };

describe('shard routing: every request-path statement pins the scope or the record id', () => {
  it('holds for every statement the store runs on the request path (PGlite)', async () => {
    const client = new PGlite('memory://');
    const captured: Captured[] = [];
    let capturing = false;
    const db = drizzle(client, {
      logger: { logQuery: (sql, params) => void (capturing && captured.push({ sql, params })) },
    });
    await migrate(db);
    const store = createPgliteStore(db);
    // The same database an hour later: leases and replay windows have run out.
    const later = createPgliteStore(db, { dangerouslyShiftClockMs: 3_600_000 });
    const scope = 'acct_shard';
    const ids: string[] = [];
    let keys = 0;
    const input = (overrides: Partial<ClaimInput> = {}): ClaimInput => ({
      scope,
      procedure: 'payments.create',
      keyHash: `key-${++keys}`,
      fingerprint: 'f',
      fingerprintVersion: 1,
      leaseMs: 30_000,
      owner: 'worker-a',
      input: '{"amount":1}',
      ...overrides,
    });
    const claimed = async (claim: ClaimInput, on = store): Promise<Fence> => {
      const result = await on.claim(claim);
      if (result.kind !== 'claimed') throw new Error(`expected a claim, got ${result.kind}`);
      ids.push(result.record.id);
      return { id: result.record.id, version: result.record.version };
    };

    /** Each scenario is one path through the store; its statements are checked below. */
    const scenarios: Record<string, () => Promise<unknown>> = {
      'claim a fresh key, bounded lock wait (local mode)': () =>
        store.transaction(async (tx) => {
          const fence = await store.claim(input({ lockTimeoutMs: 500 }), tx);
          if (fence.kind === 'claimed') ids.push(fence.record.id);
        }),
      'claim a fresh key, then the duplicate reads it (in progress)': async () => {
        const claim = input();
        await claimed(claim);
        await store.claim(claim);
        await store.read(claim);
        await store.readRecovery(claim);
      },
      'complete, then replay': async () => {
        const claim = input();
        await store.complete(await claimed(claim), { status: 200, body: '{}', ...windows });
        await store.claim(claim);
      },
      'fail (stored failure)': async () =>
        store.fail(await claimed(input()), { status: 404, body: '{}', ...windows }),
      'release, then the retry takes the key over': async () => {
        const claim = input();
        await store.release(await claimed(claim), windows);
        await claimed(claim);
      },
      'phases: saveSteps, extendLease, irreversible step': async () => {
        const fence = await claimed(input());
        await store.saveSteps(fence, { steps: '[]', recoveryPoint: 'reserve', leaseMs: 30_000 });
        await store.extendLease(fence, 30_000);
        await store.saveSteps(fence, {
          steps: '[1]',
          recoveryPoint: 'charge',
          leaseMs: 30_000,
          irreversible: true,
        });
      },
      'outcome unknown, then the retry takes it over': async () => {
        const claim = input();
        await store.markUnsettled(await claimed(claim), 'OUTCOME_UNKNOWN');
        await claimed(claim);
      },
      'lease ran out: the retry takes it over, the stale owner is fenced off': async () => {
        const claim = input();
        const stale = await claimed(claim);
        await claimed(claim, later);
        await store.complete(stale, { status: 200, body: '{}', ...windows });
      },
      'replay window closed: supersede, then a fresh claim': async () => {
        const claim = input();
        await store.complete(await claimed(claim), { status: 200, body: '{}', ...windows });
        await claimed(claim, later);
      },
    };

    const checked: string[] = [];
    for (const [name, run] of Object.entries(scenarios)) {
      captured.length = 0;
      capturing = true;
      await run();
      capturing = false;
      expect(captured.length, `${name}: ran no statement`).toBeGreaterThan(0);
      for (const statement of captured) {
        const problems = routingProblems(statement, scope, ids);
        expect(problems, `${name}:\n${statement.sql}`).toEqual([]);
        checked.push(statement.sql.replace(/\s+/g, ' ').slice(0, 60));
      }
    }
    // Every kind of statement of the request path was seen (a scenario that silently stopped
    // reaching one would shrink this list).
    const kinds = new Set(checked);
    expect(kinds.size).toBeGreaterThanOrEqual(9);
    await client.close();
  });

  describe('fails a statement that lost its pin', () => {
    const scope = 'acct_a';
    const live = (where: string, params: unknown[]): Captured => ({
      sql: `select live.id from "idem_records" as live where ${where}`,
      params,
    });
    it.each([
      [
        'pinned by scope',
        live('live.scope = $1::text and live.procedure = $2::text', [scope, 'p']),
        true,
      ],
      ['pinned by id', live('live.version = $2 and live.id = $1::bigint', ['7', 3]), true],
      [
        'no scope predicate',
        live('live.procedure = $1::text and live.key_hash = $2::text', ['p', 'k']),
        false,
      ],
      ['the scope of another caller', live('live.scope = $1::text', ['acct_b']), false],
      ['scope under an OR', live('live.scope = $1::text or live.state = $2', [scope, 'x']), false],
      [
        'scope inside an ORed group',
        live('(live.scope = $1::text and true) or true', [scope]),
        false,
      ],
      ['scope under NOT', live('not (live.scope = $1::text)', [scope]), false],
      [
        'an unaliased builder update',
        {
          sql: 'update "idem_records" set "state" = $1 where ("idem_records"."id" = $2 and "idem_records"."version" = $3)',
          params: ['COMPLETED', '7', 1],
        },
        true,
      ],
      [
        'an insert of the scope',
        {
          sql: 'insert into "idem_records" as r (scope, procedure) select $1::text, $2::text on conflict do nothing',
          params: [scope, 'p'],
        },
        true,
      ],
      [
        'an insert of another scope',
        {
          sql: 'insert into "idem_records" as r (procedure, scope) select $1::text, $2::text',
          params: [scope, 'acct_b'],
        },
        false,
      ],
      [
        'a statement on another table',
        { sql: 'select 1 from orders where scope = $1', params: [scope] },
        false,
      ],
    ] as const)('%s', (_name, statement, routed) => {
      expect(routingProblems(statement, scope, ['7']).length === 0).toBe(routed);
    });
  });
});
