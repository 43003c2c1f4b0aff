import { createTRPCContext } from '@trpc/tanstack-react-query';
import type { AppRouter } from '../../createAppRouter.js';

/** tRPC's TanStack Query integration for the payments API. */
export const { TRPCProvider, useTRPC } = createTRPCContext<AppRouter>();
