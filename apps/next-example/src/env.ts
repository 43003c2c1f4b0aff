import { z } from 'zod';

/**
 * The server's settings, checked once when a server module first needs them: a missing or
 * short value names itself in one error instead of failing later inside a driver or in idem.
 */
const schema = z.object({
  /** PostgreSQL, e.g. `postgres://user@127.0.0.1:5432/app`. Behind a pooler: see the page. */
  DATABASE_URL: z.url({ protocol: /^postgres(ql)?$/ }),
  /** idem hashes keys with it (HMAC-SHA256): `openssl rand -hex 32`. */
  IDEM_KEY_SECRET: z.string().min(32),
  /** Signs the demo session cookie (a real app: its auth library's secret). */
  AUTH_SECRET: z.string().min(32),
});

export type Env = z.infer<typeof schema>;

let parsed: Env | undefined;

/** The checked settings; throws one error naming every missing or invalid variable. */
export function env(): Env {
  if (parsed) return parsed;
  const result = schema.safeParse(process.env);
  if (!result.success) {
    const problems = result.error.issues.map(
      (issue) => `${issue.path.join('.')}: ${issue.message}`,
    );
    throw new Error(`invalid environment (see .env.example): ${problems.join('; ')}`);
  }
  return (parsed = result.data);
}
