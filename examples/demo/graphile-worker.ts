/**
 * The demo on Graphile Worker: PostgreSQL from DATABASE_URL, schemas of its own
 * (`ojs_demo_graphile_worker`, `ojs_demo_unique`, with `_<OJS_EXAMPLE_SALT>` when that is set),
 * dropped before and after the run. A job runs on a real Graphile runner whose task list holds
 * only that job's task, with the adapter's preset, so the ledger follows the job; `makeDue` is
 * Graphile's `rescheduleJobs`.
 */
import pg from 'pg';
import { Logger, makeWorkerUtils, run, type Task } from 'graphile-worker';
import type { OjsJob } from 'ojs-unique';
import { createGraphileWorkerBackend, makeUniqueJobsPreset } from 'ojs-unique/graphile-worker';
import { databaseUrl, named } from '../graphile-worker/example-connection.js';
import type { DemoBackend } from './demo-backend.js';

const graphileSchema = named('ojs_demo_graphile_worker');
const uniqueSchema = named('ojs_demo_unique');

/** Graphile logs a task that throws as an error; the demo's failures are planned, so only other errors show. */
const logger = new Logger(() => (level, message, meta) => {
  if (level === 'error' && !meta?.failure) console.error(`graphile-worker: ${message}`);
});

export default async function createDemoBackend(): Promise<DemoBackend> {
  const pool = new pg.Pool({ connectionString: databaseUrl(), max: 10 });
  pool.on('error', (error) => console.error('idle client error', error));
  pool.on('connect', (client) => client.on('error', (error) => console.error('client error', error)));
  const dropSchemas = () =>
    pool.query(`drop schema if exists ${pg.escapeIdentifier(uniqueSchema)}, ${pg.escapeIdentifier(graphileSchema)} cascade`);
  await dropSchemas();
  const backend = createGraphileWorkerBackend({ pgPool: pool, uniqueSchema, workerSchema: graphileSchema });
  await backend.ready();
  const utils = await makeWorkerUtils({ pgPool: pool, schema: graphileSchema, logger });

  const graphileIdOf = async (id: string): Promise<string> => {
    const graphileId = await backend.graphileJobId(id);
    if (graphileId === null) throw new Error(`demo: no job ${id}`);
    return graphileId;
  };
  /** Graphile writes a job's completion after the task returns, so the demo polls for it. */
  const settled = async (id: string): Promise<OjsJob> => {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const job = await backend.getJob(id);
      if (job && ['completed', 'retryable', 'discarded', 'cancelled'].includes(job.state)) return job;
      if (Date.now() > deadline) throw new Error(`demo: job ${id} did not finish its attempt (last seen: ${job?.state ?? 'no such job'})`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };

  return {
    backend,
    advanceClock: null,
    async run(id, failWith) {
      const job = await backend.getJob(id);
      if (!job) throw new Error(`demo: no job ${id}`);
      const task: Task = async () => {
        if (failWith !== undefined) throw new Error(failWith);
      };
      const runner = await run({
        pgPool: pool,
        schema: graphileSchema,
        taskList: { [job.type]: task },
        concurrency: 1,
        noHandleSignals: true,
        pollInterval: 100,
        logger,
        preset: { extends: [makeUniqueJobsPreset({ uniqueSchema })] },
      });
      try {
        return await settled(id);
      } finally {
        await runner.stop();
      }
    },
    async makeDue(id) {
      // "Now" on the database's clock, which the job's run_at is compared with.
      const { rows } = await pool.query<{ now: Date }>('select now() as now');
      await utils.rescheduleJobs([await graphileIdOf(id)], { runAt: rows[0]!.now });
    },
    async close() {
      await utils.release();
      await backend.close();
      try {
        await dropSchemas();
      } finally {
        await pool.end();
      }
    },
  };
}
