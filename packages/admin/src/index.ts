export { adminCommands, keyHashOf, viewRecord } from './adminCommands.js';
export type {
  AdminCommands,
  AdminCommandsOptions,
  AdminResolution,
  RecordView,
} from './adminCommands.js';
export { AdminInputError, isAdminInputError } from './AdminInputError.js';
