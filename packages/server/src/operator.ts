/// <reference types="node" />
/**
 * `@idem/server/operator`: what operator tools use (idem-admin, CI checks of a router), kept off
 * the front door that application code imports.
 */
export { auditRouter, describeAuditFindings } from './trpc/auditRouter.js';
export type { AuditedMutation, MisplacedIdempotency, RouterAudit } from './trpc/auditRouter.js';
export { checkResolution } from './operations/resolutionResponse.js';
export type { CheckedResolution, ResolutionRequest } from './operations/resolutionResponse.js';
export { hashIdempotencyKey, MIN_KEY_SECRET_LENGTH } from './hashing/keyHash.js';
