/**
 * Ledger retention. A record of a finished job is kept exactly as long as some policy used on its
 * key (its own, or any other inserted under the same key, remembered on the key's head row) can
 * still count it as a duplicate (its terminal state is in that policy's `states` and that
 * policy's period, from the record's created_at, has not run out), and at least a grace period
 * during which OJS INFO still answers for it; then it is deleted, so the ledger does not grow
 * without bound. The precise rule: docs/graphile-worker.md, "Retention".
 *
 * Run it from Graphile Worker's cron (the {@link makeReclaimTask} task, e.g. hourly), or call it
 * from your own maintenance. A policy that counts `completed` with no period keeps its records
 * for ever: that is what it asks for.
 */
import type { Task } from 'graphile-worker';
import { translatePgError } from './graphile-worker-errors.js';
import type { PgClientLike } from './graphile-worker-pg.js';
import { DEFAULT_GRAPHILE_SCHEMA, DEFAULT_UNIQUE_SCHEMA, GraphileWorkerSql } from './graphile-worker-sql.js';

export interface ReclaimOptions {
  /** ISO 8601 duration a finished job's record is kept at least, for OJS INFO. (Default: `P1D`.) */
  grace?: string;
  /** Records deleted per statement; the call loops until a statement deletes fewer. (Default: 1000.) */
  batchSize?: number;
}

export interface ReclaimResult {
  /** Ledger records deleted. */
  reclaimed: number;
  /** Per-key head rows deleted (keys with no record left). */
  heads: number;
  /** x_successor: pending successors whose holder had ended without adding them, added now. */
  successors: number;
}

export async function reclaimUniqueJobs(
  client: PgClientLike,
  sql: GraphileWorkerSql,
  options: ReclaimOptions = {},
): Promise<ReclaimResult> {
  const grace = options.grace ?? 'P1D';
  const batchSize = options.batchSize ?? 1000;
  const total: ReclaimResult = { reclaimed: 0, heads: 0, successors: 0 };
  try {
    for (;;) {
      const { rows } = await client.query<{ promoted: number }>(sql.text('promote-stranded'), [batchSize]);
      total.successors += rows[0]!.promoted;
      if (rows[0]!.promoted < batchSize) break;
    }
    for (;;) {
      const { rows } = await client.query<ReclaimResult>(sql.text('reclaim'), [grace, batchSize]);
      const batch = rows[0]!;
      total.reclaimed += batch.reclaimed;
      total.heads += batch.heads;
      if (batch.reclaimed < batchSize) return total;
    }
  } catch (error) {
    throw translatePgError(error, { operation: 'reclaim', rolledBack: true });
  }
}

/** {@link makeReclaimTask}'s options: the retention settings and the schemas the worker uses. */
export interface ReclaimTaskOptions extends ReclaimOptions {
  /** The adapter's own schema. (Default: `ojs_unique`.) */
  uniqueSchema?: string;
  /** Graphile Worker's schema: the one the worker runs with. (Default: `graphile_worker`.) */
  workerSchema?: string;
}

/** Identifier under which to register {@link makeReclaimTask} in your task list and crontab. */
export const RECLAIM_TASK_IDENTIFIER = 'ojs_unique_reclaim';

/**
 * A Graphile Worker task that reclaims the ledger. Add it to your task list under
 * {@link RECLAIM_TASK_IDENTIFIER} and to your crontab, e.g. `0 * * * * ojs_unique_reclaim`.
 */
export function makeReclaimTask(options: ReclaimTaskOptions = {}): Task {
  // Task helpers do not say which schema the worker runs in, so it is an option here.
  const sql = new GraphileWorkerSql({
    workerSchema: options.workerSchema ?? DEFAULT_GRAPHILE_SCHEMA,
    uniqueSchema: options.uniqueSchema ?? DEFAULT_UNIQUE_SCHEMA,
  });
  return async (_payload, helpers) => {
    const result = await helpers.withPgClient((client) => reclaimUniqueJobs(client as unknown as PgClientLike, sql, options));
    helpers.logger.info(`ojs-unique: reclaimed ${result.reclaimed} ledger records and ${result.heads} key heads`);
  };
}
