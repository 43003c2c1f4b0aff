// The env sample of docs/trpc-templates.md, verbatim between the markers, with the declarations
// it assumes.
import { z } from 'zod';

// ---- verbatim from docs/trpc-templates.md: 2. Settings (env) ----
// src/env.ts (create-t3-turbo: apps/nextjs/src/env.ts, createEnv's `server`)
const schema = z.object({
  DATABASE_URL: z.url({ protocol: /^postgres(ql)?$/ }),
  IDEM_KEY_SECRET: z.string().min(32), // openssl rand -hex 32
  AUTH_SECRET: z.string().min(32),
});
// ---- end ----

export type Env = z.infer<typeof schema>;
