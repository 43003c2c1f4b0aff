/** Milliseconds in each unit `parseDuration` reads. */
const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/**
 * A duration as an operator types it, in milliseconds: a whole positive number and one unit,
 * `ms`, `s`, `m`, `h` or `d` (`7d`, `24h`, `90m`, `30s`, `1500ms`). The unit is never implied,
 * so `86400000` is refused rather than read as milliseconds or seconds. Undefined for anything
 * else, zero included (idem's windows are positive), or past `Number.MAX_SAFE_INTEGER` ms.
 */
export function parseDuration(text: string): number | undefined {
  const match = /^([1-9][0-9]*)(ms|s|m|h|d)$/.exec(text);
  if (!match) return undefined;
  const ms = Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
  return Number.isSafeInteger(ms) ? ms : undefined;
}
