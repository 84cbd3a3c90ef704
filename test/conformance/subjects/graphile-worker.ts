/**
 * The Graphile Worker subject of the conformance suite (test/adapters/graphile-worker.test.ts):
 * the adapter's backend plus a real Graphile Worker runner that moves jobs through their
 * lifecycle.
 *
 * Nothing here writes Graphile's rows: `start` runs `run()` with a task list holding only the
 * job's task, whose handler waits until the caller says how the attempt ends; `makeDue` calls
 * Graphile's `rescheduleJobs`.
 */
import { userInfo } from 'node:os';
import pg from 'pg';
import { Logger, makeWorkerUtils, run, type Runner, type Task, type WorkerUtils } from 'graphile-worker';
import type { OjsJob, OjsJobState } from '../../../src/index.js';
import type { ConformanceSubject, RunningAttempt } from '../conformance-subject.js';
import { createGraphileWorkerBackend, makeUniqueJobsPreset, type GraphileWorkerBackend } from '../../../adapters/graphile-worker/index.js';
import { withDefaultUser } from '../../../adapters/graphile-worker/graphile-worker-pg.js';
import { escapeIdentifier } from '../../../adapters/graphile-worker/graphile-worker-sql.js';

export interface GraphileWorkerSubjectOptions {
  /** (Default: `$DATABASE_URL`, else `postgres://127.0.0.1:5432/test`.) */
  connectionString?: string;
  /** Graphile Worker's schema for this subject. */
  graphileSchema: string;
  /** The adapter's schema for this subject. */
  uniqueSchema: string;
  /** Passed to the backend. (Default: false.) */
  replaceActive?: boolean;
  /** Passed to the backend; on unless false (the suite's §5 duplicate counts need it). */
  countDuplicates?: boolean;
  /** Graphile's logger. (Default: errors only.) */
  logger?: Logger;
  /** Drop both schemas first, so a rerun starts from nothing. (Default: false.) */
  fresh?: boolean;
  /**
   * How long `settled` (and so `start`, `complete`, `fail`) waits for the ledger to show the
   * state it expects before failing with a message naming the job, the states and the last
   * state seen. Shorter than the suites' test timeouts, so that message, not mocha's generic
   * timeout, is what a stuck test reports. (Default: 5000 ms.)
   */
  settleTimeoutMs?: number;
}

export interface GraphileWorkerSubject extends ConformanceSubject {
  backend: GraphileWorkerBackend;
  pool: pg.Pool;
  /** Polls until job `id` is in one of `states`; rejects after `settleTimeoutMs` (or `timeoutMs`). */
  settled(id: string, states: readonly OjsJobState[], timeoutMs?: number): Promise<OjsJob>;
}

export function databaseUrl(): string {
  return withDefaultUser(process.env.DATABASE_URL ?? 'postgres://127.0.0.1:5432/test', () => userInfo().username);
}

/**
 * Graphile's logger, quiet except for errors (a completion the worker could not write, say).
 * A task failing on purpose is logged by Graphile as an error too (`meta.failure`); those are
 * the subject's planned failures and are left out.
 */
export const quietLogger = new Logger(() => (level, message, meta) => {
  if (level === 'error' && !meta?.failure) console.error(`graphile-worker: ${message}`);
});

/** A pool with the error handlers Graphile Worker asks for: an idle client's error is logged, not fatal. */
export function makeSubjectPool(connectionString: string, max: number): pg.Pool {
  const pool = new pg.Pool({ connectionString, max });
  const log = (error: Error) => console.error('graphile-worker subject: idle client error', error);
  pool.on('error', log);
  pool.on('connect', (client) => client.on('error', log));
  return pool;
}

export async function createGraphileWorkerSubject(options: GraphileWorkerSubjectOptions): Promise<GraphileWorkerSubject> {
  const pool = makeSubjectPool(options.connectionString ?? databaseUrl(), 4);
  const logger = options.logger ?? quietLogger;
  const backend = createGraphileWorkerBackend({
    pgPool: pool,
    uniqueSchema: options.uniqueSchema,
    workerSchema: options.graphileSchema,
    replaceActive: options.replaceActive ?? false,
    countDuplicates: options.countDuplicates ?? true,
  });
  let utils: WorkerUtils | null = null;
  let running: Runner | null = null;
  const dropSchemas = () =>
    pool.query(
      `drop schema if exists ${escapeIdentifier(options.uniqueSchema)} cascade; drop schema if exists ${escapeIdentifier(options.graphileSchema)} cascade`,
    );
  try {
    if (options.fresh) await dropSchemas();
    await backend.ready();
    utils = await makeWorkerUtils({ pgPool: pool, schema: options.graphileSchema, logger });
  } catch (error) {
    await backend.close();
    await pool.end();
    throw error;
  }

  const graphileIdOf = async (id: string): Promise<string> => {
    const graphileId = await backend.graphileJobId(id);
    if (graphileId === null) throw new Error(`graphile-worker subject: job ${id} is unknown`);
    return graphileId;
  };

  const settleTimeoutMs = options.settleTimeoutMs ?? 5_000;
  /** Polls the ledger until the job reaches one of `states` (Graphile's completion write is not awaited by the worker). */
  const settled = async (id: string, states: readonly OjsJobState[], timeoutMs = settleTimeoutMs): Promise<OjsJob> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const job = await backend.getJob(id);
      if (job && states.includes(job.state)) return job;
      if (Date.now() >= deadline) {
        throw new Error(
          `graphile-worker subject: job ${id} did not reach ${states.join(' or ')} within ${timeoutMs} ms (last seen: ${job ? job.state : 'no such job'})`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };

  const start = async (id: string): Promise<RunningAttempt> => {
    if (running) throw new Error('graphile-worker subject: one attempt at a time');
    const job = await backend.getJob(id);
    if (!job) throw new Error(`graphile-worker subject: job ${id} is unknown`);
    const graphileId = await graphileIdOf(id);

    let began!: (error?: Error) => void;
    const begun = new Promise<void>((resolve, reject) => (began = (error) => (error ? reject(error) : resolve())));
    let finish!: (outcome: { fail: string | null }) => void;
    const finished = new Promise<{ fail: string | null }>((resolve) => (finish = resolve));

    const handler: Task = async (_payload, helpers) => {
      if (helpers.job.id !== graphileId) {
        // The suite promises `id` is the only due job of its queue; a worker that took another
        // one means that promise was broken, and the test must say so rather than pass.
        const error = new Error(`graphile-worker subject: the worker took job ${helpers.job.id}, not ${graphileId}`);
        began(error);
        throw error;
      }
      began();
      const outcome = await finished;
      if (outcome.fail !== null) throw new Error(outcome.fail);
    };
    // The suite promises `id` is the only due job *of its OJS queue*, but OJS queues are not
    // Graphile queues: a Graphile worker takes any due job of its tasks. So the other jobs are
    // held out of its reach with row locks, which its fetch (FOR UPDATE SKIP LOCKED) passes
    // over; nothing is written to them, and the locks go once the worker has taken `id`.
    const fence = await pool.connect();
    await fence.query('begin');
    await fence.query(`select id from ${escapeIdentifier(options.graphileSchema)}._private_jobs where id <> $1 for update skip locked`, [
      graphileId,
    ]);
    const releaseFence = async () => {
      await fence.query('rollback').catch(() => undefined);
      fence.release();
    };
    let runner: Runner;
    try {
      runner = await run({
        pgPool: pool,
        schema: options.graphileSchema,
        taskList: { [job.type]: handler },
        concurrency: 1,
        noHandleSignals: true,
        pollInterval: 100,
        logger,
        preset: { extends: [makeUniqueJobsPreset({ uniqueSchema: options.uniqueSchema })] },
      });
    } catch (error) {
      await releaseFence();
      throw error;
    }
    running = runner;
    const stop = async () => {
      running = null;
      await runner.stop();
    };
    try {
      await begun;
      await settled(id, ['active']);
    } catch (error) {
      finish({ fail: 'graphile-worker subject: aborted' });
      await stop();
      throw error;
    } finally {
      await releaseFence();
    }
    const end = async (outcome: { fail: string | null }, states: readonly OjsJobState[]): Promise<OjsJob> => {
      finish(outcome);
      // Stopping right away: the worker finishes this job and takes no other.
      await stop();
      return settled(id, states);
    };
    return {
      complete: () => end({ fail: null }, ['completed', 'cancelled']),
      fail: (message = 'graphile-worker subject: planned failure') => end({ fail: message }, ['retryable', 'discarded', 'cancelled']),
    };
  };

  const makeDue = async (id: string): Promise<void> => {
    const graphileId = await graphileIdOf(id);
    // "Now" on the database clock, which the state derivation compares run_at with.
    const { rows } = await pool.query<{ now: Date }>('select now() as now');
    const rescheduled = await utils!.rescheduleJobs([graphileId], { runAt: rows[0]!.now });
    if (rescheduled.length !== 1) throw new Error(`graphile-worker subject: rescheduleJobs did not take job ${id} (is it running?)`);
  };

  return {
    backend,
    pool,
    settled,
    start,
    makeDue,
    clock: null,
    async close(result?: { passed: boolean }) {
      await running?.stop();
      await utils?.release();
      await backend.close();
      try {
        // A failed test's schemas stay for inspection (`\dn` in psql).
        if (result?.passed) await dropSchemas();
      } finally {
        await pool.end();
      }
    },
  };
}
