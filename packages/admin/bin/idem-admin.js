#!/usr/bin/env node
// idem-admin from its TypeScript source, through tsx: a workspace package runs the current source
// with no build step, and `idem-admin audit` can import the TypeScript module holding a router.
// The published package runs dist/cli.js instead (publishConfig.bin).
import { register } from 'tsx/esm/api';

register();
await import('../src/cli.ts');
