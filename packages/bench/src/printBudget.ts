import { CATEGORIES } from './profileCategories.js';
import type { BudgetResult } from './sections/measureBudget.js';
import { table } from './textTable.js';

const us = (n: number | null) => (n === null ? 'n/a' : n.toFixed(1));
const diff = (a: number | null, b: number | null) =>
  a === null || b === null ? 'n/a' : `${b - a >= 0 ? '+' : ''}${(b - a).toFixed(1)}`;

/** The `budget` section as tables: CPU µs per request by category, then idem's top functions. */
export function printBudget(budget: BudgetResult): string {
  const { plain, idem } = budget;
  const row = (label: string, a: number | null, b: number | null) => [
    label,
    us(a),
    us(b),
    diff(a, b),
  ];
  const rows = [
    ...CATEGORIES.filter((c) => c !== 'idle').map((c) =>
      row(c, plain.categories[c], idem.categories[c]),
    ),
    row('= server main thread (/proc)', plain.mainThreadUs, idem.mainThreadUs),
    row('server process, all threads but the profiler', plain.serverUs, idem.serverUs),
    row('PostgreSQL backends (/proc)', plain.postgresUs, idem.postgresUs),
    row('load generator (cpuUsage)', plain.loadGeneratorUs, idem.loadGeneratorUs),
    row('= total CPU per request', plain.totalUs, idem.totalUs),
    row('(idle: main thread waiting)', plain.categories.idle, idem.categories.idle),
    row('(main thread busy in samples, wall)', plain.sampledWallUs, idem.sampledWallUs),
    row("(the profiler's sampling thread)", plain.profilerUs, idem.profilerUs),
    row('(PostgreSQL, other processes)', plain.postgresRestUs, idem.postgresRestUs),
    [
      'requests profiled, req/s',
      `${plain.requests}, ${plain.throughput.toFixed(0)}`,
      `${idem.requests}, ${idem.throughput.toFixed(0)}`,
      '',
    ],
    row(
      'statements on the wire (BEGIN/COMMIT incl.)',
      budget.roundTrips.plain,
      budget.roundTrips.idem,
    ),
    row('statements by Drizzle', budget.roundTrips.drizzlePlain, budget.roundTrips.drizzleIdem),
  ];
  const out = [
    table(
      `Per-request CPU budget: µs of CPU per request (the main thread's split by V8's samples), fresh key each, ${budget.concurrency} connections, ` +
        `${budget.windows} window(s) of ${budget.windowMs} ms per variant after ${budget.warmupMs} ms warm-up, ` +
        `V8 sampling every ${budget.samplingIntervalUs} µs`,
      ['where', 'plain', 'idem', 'idem - plain'],
      rows,
    ),
    table(
      "Top self time in idem's server (µs of CPU per request; builtins and node's JS count for their caller's category)",
      ['function', 'where', 'category', 'µs/req'],
      budget.idemTop.map((f) => [f.name, f.url, f.category, f.us.toFixed(1)]),
    ),
  ];
  for (const variant of [plain, idem]) {
    if (variant.otherTop.length === 0) continue;
    out.push(
      `"other" in ${variant.path}: ` +
        variant.otherTop.map((f) => `${f.name} ${f.url} ${f.us.toFixed(1)}`).join('; '),
    );
  }
  return out.join('\n');
}
