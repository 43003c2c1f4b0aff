import { describe, expect, it } from 'vitest';
import type { IdemTestAnswer } from '../app/IdemTestAnswer.js';
import { firstDifference, IdemGateError, isIdemGateError, tallyAnswers } from './IdemGateError.js';

const answer = (over: Partial<IdemTestAnswer>): IdemTestAnswer => ({
  server: 0,
  status: 200,
  headers: {},
  text: '{"result":{"data":{"id":1}}}',
  json: undefined,
  replayed: false,
  reason: null,
  message: null,
  ...over,
});

describe('IdemGateError', () => {
  it('names the gate, what was expected, what happened, the likely cause and the answers', () => {
    const error = new IdemGateError({
      gate: 'concurrency',
      path: 'orders.create',
      expected: 'the effect to have moved by 1 in all',
      actual: 'it moved by 2',
      likelyCause: 'a write is going around `ctx.idem.tx`',
      answers: [answer({}), answer({ server: 1, replayed: true })],
    });
    expect(error.message).toBe(
      [
        'idem concurrency gate failed for orders.create',
        '  expected: the effect to have moved by 1 in all',
        '  got:      it moved by 2',
        '  likely:   a write is going around `ctx.idem.tx`',
        '  answers:',
        '    1. server 0: 200 {"result":{"data":{"id":1}}}',
        '    2. server 1: 200 replayed {"result":{"data":{"id":1}}}',
      ].join('\n'),
    );
    expect(isIdemGateError(error)).toBe(true);
    expect(isIdemGateError({ isIdemGateError: true })).toBe(true);
    expect(isIdemGateError(new Error('no'))).toBe(false);
    expect(isIdemGateError(null)).toBe(false);
  });

  it('tallies answers by kind and finds where two bodies part', () => {
    expect(
      tallyAnswers([
        answer({}),
        answer({ replayed: true }),
        answer({ replayed: true }),
        answer({ status: 409, reason: 'IDEMPOTENCY_REQUEST_IN_PROGRESS' }),
      ]),
    ).toBe('200 ×1, 200 replayed ×2, 409 IDEMPOTENCY_REQUEST_IN_PROGRESS ×1');
    expect(firstDifference('{"at":1.25}', '{"at":1.5}')).toBe(
      'at character 8: "{\\"at\\":1.25}" vs "{\\"at\\":1.5}"',
    );
  });
});
