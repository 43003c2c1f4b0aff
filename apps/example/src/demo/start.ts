/**
 * `pnpm start`: the demo. Starts the example server on embedded PGlite (in `.data/demo`, or
 * IDEM_EXAMPLE_DATA_DIR), runs the demo client through injected faults, prints the timeline and
 * the counts, and exits 0 only when the guarantee held.
 */
import { fileURLToPath } from 'node:url';
import { runDemo } from './runDemo.js';

const dataDir =
  process.env.IDEM_EXAMPLE_DATA_DIR || fileURLToPath(new URL('../../.data/demo', import.meta.url));

try {
  const held = await runDemo({ dataDir, write: (line) => console.log(line) });
  process.exitCode = held ? 0 : 1;
} catch (error) {
  console.error('\nThe demo failed:', error);
  process.exitCode = 2;
}
