// The fake downstream the crash points samples of docs/testing.md import as `./FakeProcessor.js`.
import type { IdemTestDb } from '@idem/testing';

export interface FakeCharge {
  id: string;
  amountCents: number;
}

export declare class FakeProcessor {
  constructor(db: IdemTestDb);
  charge(
    request: { idempotencyKey: string; orderId: string; amountCents: number },
    options: { signal: AbortSignal },
  ): Promise<FakeCharge>;
  findCharge(idempotencyKey: string): Promise<FakeCharge | null>;
}
