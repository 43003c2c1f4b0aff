import { describe, expect, it } from 'vitest';
import { IDEM_REASON_TABLE, readIdemErrorData } from './reasons.js';

describe('reason table', () => {
  it('keeps the two conflicts apart: a naive retry-on-409 loop never spins on a reused key', () => {
    expect(IDEM_REASON_TABLE.IDEMPOTENCY_KEY_REUSED.httpStatus).toBe(422);
    expect(IDEM_REASON_TABLE.IDEMPOTENCY_REQUEST_IN_PROGRESS.httpStatus).toBe(409);
    expect(IDEM_REASON_TABLE.IDEMPOTENCY_KEY_REUSED.retryable).toBe(false);
    expect(IDEM_REASON_TABLE.IDEMPOTENCY_REQUEST_IN_PROGRESS.retryable).toBe(true);
  });

  it('reads data.idem and rejects anything malformed', () => {
    expect(readIdemErrorData({ idem: { reason: 'IDEMPOTENCY_KEY_REUSED' } })).toEqual({
      reason: 'IDEMPOTENCY_KEY_REUSED',
    });
    expect(readIdemErrorData({ idem: { reason: 'NOPE' } })).toBeNull();
    expect(readIdemErrorData({ code: 'BAD_REQUEST' })).toBeNull();
    expect(readIdemErrorData(null)).toBeNull();
  });
});
