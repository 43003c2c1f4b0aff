import type { SQL } from 'drizzle-orm';
import {
  executeRows,
  type DrizzleRunner,
  type StatementRunner,
  type StatementRunnerFactory,
} from '../drizzle/executeRows.js';
import {
  outcomeUnlessLiveTemplate,
  readAnswerTemplate,
  readLiveTemplate,
  recordOutcomeTemplate,
} from '../statements/request/commitStatements.js';

/** The statements of a local-mode request, rendered once per store (commitStatements.ts). */
export interface HotPathTemplates {
  readonly readLive: ReturnType<typeof readLiveTemplate>;
  readonly readAnswer: ReturnType<typeof readAnswerTemplate>;
  readonly recordOutcome: ReturnType<typeof recordOutcomeTemplate>;
  readonly outcomeUnlessLive: ReturnType<typeof outcomeUnlessLiveTemplate>;
}

/**
 * What the calls of one store share (RequestCalls, WorkerCalls, OperatorCalls): the database,
 * its clock, the driver's statement runner and the hot path's templates, built once by the
 * store's constructor, and how a call runs a statement on them. `TTx` is a transaction of `db`.
 */
export class StoreParts<TTx> {
  /** The database: its transactions, and the statements run on it outside one. */
  readonly db: { transaction<T>(fn: (tx: TTx) => Promise<T>): Promise<T> };
  /** The database clock of every statement (`databaseClock`). */
  readonly clock: SQL;
  /** How raw statements run, on `db` or a transaction (`StatementRunnerFactory`). */
  readonly runner: StatementRunnerFactory;
  /** The hot path's statements, rendered once. */
  readonly templates: HotPathTemplates;

  constructor(
    db: { transaction<T>(fn: (tx: TTx) => Promise<T>): Promise<T> },
    clock: SQL,
    runner: StatementRunnerFactory,
  ) {
    this.db = db;
    this.clock = clock;
    this.runner = runner;
    this.templates = {
      readLive: readLiveTemplate(clock),
      readAnswer: readAnswerTemplate(clock),
      recordOutcome: recordOutcomeTemplate(clock),
      outcomeUnlessLive: outcomeUnlessLiveTemplate(clock),
    };
  }

  /** Where raw statements run: on `tx`, or on the database, through the driver's runner. */
  statements(tx?: TTx): StatementRunner {
    return this.runner((tx ?? this.db) as unknown as DrizzleRunner, tx !== undefined);
  }

  /** Runs a fenced write returning the id it wrote: whether the fence held. */
  async written(statement: SQL, tx?: TTx): Promise<boolean> {
    return (await executeRows(this.statements(tx), statement)).length > 0;
  }

  /** Runs a statement returning one row `n`. */
  async count(statement: SQL): Promise<number> {
    const [row] = await executeRows<{ n: number }>(this.statements(), statement);
    return row!.n;
  }
}
