/**
 * Turns a procedure's output into the text the store keeps, and back. The replay returns
 * `deserialize(serialize(output))`, which tRPC then sends as it sent the first response, so the
 * round trip must preserve what your transformer sends.
 */
export interface ResultSerializer {
  serialize(output: unknown): string;
  deserialize(text: string): unknown;
}

/**
 * JSON, the default: right when your router has no transformer. With superjson, pass
 * `{ serialize: superjson.stringify, deserialize: superjson.parse }` so dates and maps replay as
 * they were sent. `undefined` output is stored as the empty string.
 */
export const jsonSerializer: ResultSerializer = {
  serialize: (output) => (output === undefined ? '' : JSON.stringify(output)),
  deserialize: (text) => (text === '' ? undefined : JSON.parse(text)),
};
