/** `http` takes tRPC's own httpLink options, typed by the router: a transformer is required when the router has one. */
import { initTRPC } from '@trpc/server';
import { idemLink } from './idemLink.js';

const identity = { serialize: (value: unknown) => value, deserialize: (value: unknown) => value };
const t = initTRPC.create({ transformer: identity });
const router = t.router({ ping: t.procedure.query(() => 'pong') });
type TransformedRouter = typeof router;

idemLink<TransformedRouter>({ http: { url: '/trpc', transformer: identity }, idempotent: {} });
// @ts-expect-error the router has a transformer, so the link needs it too
idemLink<TransformedRouter>({ http: { url: '/trpc' }, idempotent: {} });
