/**
 * The Graphile Worker subject of the conformance suite (test/adapters/graphile-worker.test.ts):
 * the adapter's backend plus a real Graphile Worker runner that moves jobs through their
 * lifecycle.
 *
 * Nothing here writes Graphile's rows: `start` runs `run()` with a task list holding only the
 * job's task, whose handler waits until the caller says how the attempt ends; `makeDue` calls
 * Graphile's `rescheduleJobs`. Several attempts may run at once, each on a runner of its own.
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
  /**
   * When set, a failed attempt that leaves the job `retryable` is moved to run this long after
   * the failure (Graphile's `rescheduleJobs`): Graphile Worker's own delay, exp(min(attempts,
   * 10)) seconds, is not configurable, and a test comparing states with another host needs the
   * retry to stay `retryable` as long as there. (Default: Graphile's delay.)
   */
  retryDelayMs?: number;
  /**
   * The pool's size. Each running attempt's runner holds one connection (Graphile's LISTEN), and
   * a start needs three more (the fence, the new runner's LISTEN and fetch): at least 3 plus the
   * most attempts that run at once, else a start waits for a connection and times out. (Default: 4.)
   */
  poolSize?: number;
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
  const pool = makeSubjectPool(options.connectionString ?? databaseUrl(), options.poolSize ?? 4);
  const logger = options.logger ?? quietLogger;
  const backend = createGraphileWorkerBackend({
    pgPool: pool,
    uniqueSchema: options.uniqueSchema,
    workerSchema: options.graphileSchema,
    replaceActive: options.replaceActive ?? false,
    countDuplicates: options.countDuplicates ?? true,
  });
  let utils: WorkerUtils | null = null;
  /** The attempts in progress, each failed by `close` when nobody ended it. */
  const running = new Set<{ abort(): Promise<void> }>();
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

  /** Polls until Graphile's row `graphileId` is no longer locked by a worker (or is gone). */
  const unlocked = async (graphileId: string): Promise<void> => {
    const deadline = Date.now() + settleTimeoutMs;
    const query = `select 1 from ${escapeIdentifier(options.graphileSchema)}._private_jobs where id = $1 and locked_at is not null`;
    while ((await pool.query(query, [graphileId])).rowCount !== 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };

  const start = async (id: string): Promise<RunningAttempt> => {
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
    // over; nothing is written to them, and the locks go once the worker has taken `id`. A job
    // another attempt runs is out of reach already (`locked_at`, no row lock held: Graphile locks
    // a row only while its fetch takes it) and is left alone, so nothing its worker writes waits
    // for this fence.
    const fence = await pool.connect();
    await fence.query('begin');
    await fence.query(
      `select id from ${escapeIdentifier(options.graphileSchema)}._private_jobs where id <> $1 and locked_at is null for update skip locked`,
      [graphileId],
    );
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
    const attempt = {
      abort: async () => {
        finish({ fail: 'graphile-worker subject: closed' });
        await stop();
        await unlocked(graphileId);
      },
    };
    running.add(attempt);
    const stop = async () => {
      running.delete(attempt);
      await runner.stop();
    };
    let timer: NodeJS.Timeout | undefined;
    try {
      // A worker that takes nothing (the job is not due on Graphile) fails the start, rather than
      // leaving the fence's locks held.
      const timedOut = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`graphile-worker subject: no worker took job ${id} within ${settleTimeoutMs} ms`)),
          settleTimeoutMs,
        );
      });
      await Promise.race([begun, timedOut]);
      await settled(id, ['active']);
    } catch (error) {
      finish({ fail: 'graphile-worker subject: aborted' });
      await stop();
      throw error;
    } finally {
      clearTimeout(timer);
      await releaseFence();
    }
    const end = async (outcome: { fail: string | null }, states: readonly OjsJobState[]): Promise<OjsJob> => {
      finish(outcome);
      // Stopping right away: the worker finishes this job and takes no other.
      await stop();
      // Once the worker's write is in (the row deleted or unlocked, in one transaction with the
      // ledger's label), the state is final: it is read once, not waited for (a job cancelled
      // while it ran reads `cancelled` before its worker wrote anything).
      await unlocked(graphileId);
      return settled(id, states, 0);
    };
    return {
      complete: () => end({ fail: null }, ['completed', 'cancelled']),
      fail: async (message = 'graphile-worker subject: planned failure') => {
        const failed = await end({ fail: message }, ['retryable', 'discarded', 'cancelled']);
        if (failed.state !== 'retryable' || options.retryDelayMs === undefined) return failed;
        const { rows } = await pool.query<{ at: Date }>("select now() + $1 * interval '1 millisecond' as at", [options.retryDelayMs]);
        const rescheduled = await utils!.rescheduleJobs([graphileId], { runAt: rows[0]!.at });
        if (rescheduled.length !== 1) throw new Error(`graphile-worker subject: rescheduleJobs did not take job ${id}`);
        return settled(id, ['retryable']);
      },
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
      // An attempt nobody ended (its job cancelled while running, say) fails, so its runner can stop.
      await Promise.all([...running].map((attempt) => attempt.abort()));
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
