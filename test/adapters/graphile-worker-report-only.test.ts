/**
 * Report-only policies (`x_report_only`) on Graphile Worker: utils `addJob`/`addJobs`, task
 * helpers, `addJobWithClient` and the backend's `enqueue`: always inserted, `wouldBe` on the
 * result, no enforced key held, counted as what the policy would have done. Real PostgreSQL.
 */
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { runOnce } from 'graphile-worker';
import type pg from 'pg';
import type { EnqueueResult } from '../../src/index.js';
import {
  addJobWithClient,
  createGraphileWorkerBackend,
  makeUniqueJobsPreset,
  makeUniqueWorkerUtils,
  withUniqueHelpers,
  type UniqueWorkerUtils,
} from '../../adapters/graphile-worker/index.js';
import { quietLogger } from '../conformance/subjects/graphile-worker.js';
import { useTelemetryCapture } from '../telemetry/telemetry-capture.js';
import { expectReportOnlyScenario, type AddThrough, type ReportOnlyAdd } from '../report-only-scenario.js';
import { isolatePerTest, makePool } from './graphile-worker-fixture.js';

const FILE = fileURLToPath(import.meta.url);
const TYPE = 'report_build';
const normalised = (result: unknown): ReportOnlyAdd => ({ ...(result as EnqueueResult), id: (result as EnqueueResult).job.id });

describe('graphile-worker adapter: report-only policies', function () {
  this.timeout(30_000);
  const schemas = isolatePerTest(FILE);
  const capture = useTelemetryCapture();
  let pool: pg.Pool;
  let utils: UniqueWorkerUtils;

  beforeEach(async () => {
    pool = makePool(4);
    const { graphileSchema, uniqueSchema } = schemas.current();
    utils = await makeUniqueWorkerUtils({ pgPool: pool, schema: graphileSchema, uniqueSchema, countDuplicates: true, logger: quietLogger });
  });
  afterEach(async () => {
    await utils.release();
    await pool.end();
  });

  const jobs = async (): Promise<number> => {
    const { rows } = await pool.query<{ n: number }>(
      `select count(*)::int as n from ${schemas.current().graphileSchema}._private_jobs j join ${schemas.current().graphileSchema}._private_tasks t on t.id = j.task_id where t.identifier = $1`,
      [TYPE],
    );
    return rows[0]!.n;
  };
  const duplicateCount = async (id: string): Promise<number | undefined> => {
    const { rows } = await pool.query<{ n: number }>(
      `select c.duplicate_count as n from ${schemas.current().uniqueSchema}.jobs l
       join ${schemas.current().uniqueSchema}.duplicate_counts c on c.job_id = l.job_id where l.ojs_id = $1`,
      [id],
    );
    return rows[0]?.n;
  };
  const scenario = (add: AddThrough) =>
    expectReportOnlyScenario(add, { type: TYPE, queue: 'default', system: 'graphile-worker', capture, jobs, duplicateCount });

  it('utils addJob: always inserts, wouldBe on the result, enforcing later is clean', async () => {
    await scenario((type, payload, unique) => utils.addJob(type, payload, { unique }).then(normalised));
  });

  it('utils addJobs: the same, entry by entry', async () => {
    await scenario((type, payload, unique) =>
      utils.addJobs([{ identifier: type, payload, unique }]).then(([result]) => normalised(result)),
    );
  });

  it('addJobWithClient: the same, inside the caller transaction', async () => {
    const { graphileSchema, uniqueSchema } = schemas.current();
    await scenario(async (type, payload, unique) => {
      const client = await pool.connect();
      try {
        await client.query('begin');
        const result = await addJobWithClient(
          client,
          type,
          payload,
          { unique },
          { workerSchema: graphileSchema, uniqueSchema, countDuplicates: true },
        );
        await client.query('commit');
        return normalised(result);
      } catch (error) {
        await client.query('rollback');
        throw error;
      } finally {
        client.release();
      }
    });
  });

  it('createGraphileWorkerBackend enqueue: the same', async () => {
    const { graphileSchema, uniqueSchema } = schemas.current();
    const backend = await createGraphileWorkerBackend({ pgPool: pool, workerSchema: graphileSchema, uniqueSchema, countDuplicates: true });
    try {
      await scenario((type, args, unique) => backend.enqueue({ type, args, unique }).then(normalised));
    } finally {
      await backend.close();
    }
  });

  it('withUniqueHelpers: helpers.addJob under a report-only policy inserts and reports', async () => {
    const { graphileSchema, uniqueSchema } = schemas.current();
    const results: EnqueueResult[] = [];
    await utils.addJob('parent', { n: 1 });
    await utils.addJob('parent', { n: 2 });
    const taskList = withUniqueHelpers(
      {
        parent: async (_payload, helpers) => {
          results.push((await helpers.addJob(TYPE, {}, { unique: { keys: ['type'], x_report_only: true } })) as unknown as EnqueueResult);
        },
        [TYPE]: async () => undefined,
      },
      { uniqueSchema, workerSchema: graphileSchema, countDuplicates: true },
    );
    const preset = { extends: [makeUniqueJobsPreset({ uniqueSchema })] };
    await runOnce({ pgPool: pool, schema: graphileSchema, taskList, logger: quietLogger, preset, concurrency: 1 });
    expect(results.map((result) => (result.outcome === 'created' ? (result.wouldBe ?? 'none') : result.outcome)).sort()).to.deep.equal([
      'none',
      'rejected',
    ]);
    expect(results.every((result) => result.outcome === 'created' && result.reportOnly === true)).to.equal(true);
  });
});
