import { describe, expect, it } from 'vitest';
import { CallStop } from './CallStop.js';

describe('CallStop', () => {
  it('calls its listener once with the first reason, then aborts a signal made before or after', () => {
    const stop = new CallStop();
    const early = stop.signal();
    const heard: unknown[] = [];
    stop.onStop((reason) => heard.push(reason));
    stop.stop('first');
    stop.stop('second');
    expect(heard).toEqual(['first']);
    expect([stop.aborted, stop.reason]).toEqual([true, 'first']);
    expect([early.aborted, early.reason]).toEqual([true, 'first']);
    const late = stop.signal();
    expect([late.aborted, late.reason]).toEqual([true, 'first']);
  });

  it('keeps one listener: a new one replaces the last, undefined removes it', () => {
    const stop = new CallStop();
    const heard: string[] = [];
    stop.onStop(() => heard.push('old'));
    stop.onStop(() => heard.push('new'));
    stop.onStop(undefined);
    stop.onStop(() => heard.push('last'));
    stop.stop('x');
    expect(heard).toEqual(['last']);
  });

  it("follows the caller's signal until disposed", () => {
    const caller = new AbortController();
    const stop = new CallStop(caller.signal);
    const heard: unknown[] = [];
    stop.onStop((reason) => heard.push(reason));
    caller.abort('caller');
    expect(heard).toEqual(['caller']);
    expect(stop.reason).toBe('caller');

    const later = new AbortController();
    const disposed = new CallStop(later.signal);
    disposed.dispose();
    later.abort('too late');
    expect(disposed.aborted).toBe(false);
  });

  it("starts stopped when the caller's signal already aborted", () => {
    const caller = new AbortController();
    caller.abort('before');
    const stop = new CallStop(caller.signal);
    expect([stop.aborted, stop.reason, stop.signal().reason]).toEqual([true, 'before', 'before']);
  });
});
