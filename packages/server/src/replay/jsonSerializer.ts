import type { ResultSerializer } from '../types/ResultSerializer.js';
/**
 * JSON, the default: right when your router has no transformer. With superjson, pass
 * `{ serialize: superjson.stringify, deserialize: superjson.parse }` so dates and maps replay as
 * they were sent. `undefined` output is stored as the empty string.
 */
export const jsonSerializer: ResultSerializer = {
  serialize: (output) => (output === undefined ? '' : JSON.stringify(output)),
  deserialize: (text) => (text === '' ? undefined : JSON.parse(text)),
};
