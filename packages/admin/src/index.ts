export { adminCommands, keyHashOf, viewRecord } from './adminCommands.js';
export type { AdminCommands, RecordView } from './adminCommands.js';
