export { adminCommands, keyHashOf, viewRecord } from './adminCommands.js';
export type { AdminCommands, AdminCommandsOptions, RecordView } from './adminCommands.js';
