import { z } from 'zod';

/** One committed step: a done phase or call with its serialized result, or a call's intent. */
export const stepRecordSchema = z.object({
  status: z.enum(['intent', 'done']),
  result: z.string().optional(),
});
export type StepRecord = z.infer<typeof stepRecordSchema>;

/** The steps of a record by name, as stored in its `steps` column (JSON text). */
export type Steps = Record<string, StepRecord>;

const stepsSchema = z.record(z.string(), stepRecordSchema);

export function parseSteps(text: string | null): Steps {
  return text === null || text === '' ? {} : stepsSchema.parse(JSON.parse(text));
}
