import {
  calleeCategory,
  CATEGORIES,
  categoryOf,
  shortUrl,
  type Category,
} from './profileCategories.js';

/** The parts of a V8 CPU profile (`Profiler.stop`, a `.cpuprofile` file) the budget reads. */
export interface CpuProfile {
  nodes: {
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
    children?: number[];
  }[];
  /** Microseconds, on V8's monotonic clock. */
  startTime: number;
  endTime: number;
  /** The node on top of the stack at each sample, and the µs since the sample before. */
  samples?: number[];
  timeDeltas?: number[];
}

/** Self time of one function (all its call paths together). */
export interface FunctionCost {
  name: string;
  /** `shortUrl`: path inside its package or the workspace, with the line. */
  url: string;
  category: Category;
  us: number;
}

/** One profile's main-thread time, in µs. */
export interface ProfileAttribution {
  byCategory: Record<Category, number>;
  /** Every function with self time, most first. */
  functions: FunctionCost[];
  durationUs: number;
}

export function emptyCategories(): Record<Category, number> {
  return Object.fromEntries(CATEGORIES.map((c) => [c, 0])) as Record<Category, number>;
}

/**
 * Sums the self time of each profile node (a sample lasts until the next one, as DevTools counts
 * it) into its category. A frame of node's own JS or a V8 builtin takes its caller's category
 * (see `calleeCategory`): `JSON.parse` in tRPC's adapter is tRPC's, a socket write from
 * postgres.js is the driver's, the response's write is `node http`.
 */
export function attributeProfile(profile: CpuProfile): ProfileAttribution {
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  const selfUs = new Map<number, number>();
  let at = profile.startTime;
  const times = samples.map((_, i) => (at += deltas[i] ?? 0));
  samples.forEach((id, i) => {
    const until = i + 1 < times.length ? times[i + 1]! : profile.endTime;
    selfUs.set(id, (selfUs.get(id) ?? 0) + Math.max(0, until - times[i]!));
  });

  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const childIds = new Set(profile.nodes.flatMap((node) => node.children ?? []));
  const category = new Map<number, Category>();
  // Each node with the category of the nearest frame above it that has one (null: none yet).
  const stack: [number, Category | null][] = profile.nodes
    .filter((node) => !childIds.has(node.id))
    .map((node) => [node.id, null]);
  while (stack.length > 0) {
    const [id, caller] = stack.pop()!;
    const { callFrame, children } = byId.get(id)!;
    const own = categoryOf(callFrame.functionName, callFrame.url);
    category.set(id, own ?? calleeCategory(callFrame.url, caller));
    // Below a node I/O frame, builtins stay with it; below '(root)' nothing is known yet.
    const below = own ?? (callFrame.functionName === '(root)' ? null : category.get(id)!);
    for (const child of children ?? []) stack.push([child, below]);
  }

  const byCategory = emptyCategories();
  const functions = new Map<string, FunctionCost>();
  for (const [id, us] of selfUs) {
    const node = byId.get(id)!;
    const cat = category.get(id)!;
    byCategory[cat] += us;
    const name = node.callFrame.functionName || '(anonymous)';
    const url = shortUrl(node.callFrame.url, node.callFrame.lineNumber);
    const key = `${cat}\u0000${name}\u0000${url}`;
    const entry = functions.get(key) ?? { name, url, category: cat, us: 0 };
    entry.us += us;
    functions.set(key, entry);
  }
  return {
    byCategory,
    functions: [...functions.values()].sort((a, b) => b.us - a.us),
    durationUs: profile.endTime - profile.startTime,
  };
}
