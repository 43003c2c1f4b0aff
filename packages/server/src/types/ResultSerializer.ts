/**
 * Turns a procedure's output into the text the store keeps, and back. The replay returns
 * `deserialize(serialize(output))`, which tRPC then sends as it sent the first response, so the
 * round trip must preserve what your transformer sends.
 */
export interface ResultSerializer {
  serialize(output: unknown): string;
  deserialize(text: string): unknown;
}
