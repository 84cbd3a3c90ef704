/**
 * Graphile cron items with a policy (uniqueCronItems + the relay task), through a real `run()`
 * whose scheduler backfills an hour of ticks: the backfill adds each tick's job through the same
 * scheduling statement as a live tick, without waiting a minute for one.
 */
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { parseCronItems, run, type ParsedCronItem, type Runner, type TaskList } from 'graphile-worker';
import type pg from 'pg';
import { InvalidJobInputError } from '../../src/index.js';
import {
  UNIQUE_CRON_TASK_IDENTIFIER,
  makeUniqueCronTask,
  makeUniqueJobsPreset,
  makeUniqueWorkerUtils,
  uniqueCronItems,
} from '../../adapters/graphile-worker/index.js';
import { quietLogger } from '../conformance/subjects/graphile-worker.js';
import { isolatePerTest, makePool } from './graphile-worker-fixture.js';

const FILE = fileURLToPath(import.meta.url);
const HOUR = 3_600_000;

describe('graphile-worker: cron items with a policy', function () {
  this.timeout(60_000);
  const schemas = isolatePerTest(FILE);
  let pool: pg.Pool;
  let runner: Runner | null;

  beforeEach(async () => {
    pool = makePool(4);
    runner = null;
    const { graphileSchema, uniqueSchema } = schemas.current();
    // Migrates both schemas.
    await (await makeUniqueWorkerUtils({ pgPool: pool, schema: graphileSchema, uniqueSchema, logger: quietLogger })).release();
  });
  afterEach(async () => {
    await runner?.stop();
    await pool.end();
  });

  /** Graphile backfills only identifiers it already knows: know `identifier` since two hours ago. */
  const knownSince2HoursAgo = async (identifier: string) => {
    await pool.query(
      `insert into "${schemas.current().graphileSchema}"._private_known_crontabs (identifier, known_since) values ($1, now() - interval '2 hours')`,
      [identifier],
    );
  };
  const jobsOf = async (task: string) =>
    (
      await pool.query<{ id: string; payload: { _cron: { ts: string; backfilled: boolean } }; run_at: Date; revision: number }>(
        `select j.id, j.payload, j.run_at, j.revision from "${schemas.current().graphileSchema}"._private_jobs j
         join "${schemas.current().graphileSchema}"._private_tasks t on t.id = j.task_id where t.identifier = $1 order by j.id`,
        [task],
      )
    ).rows;
  /** Runs a worker (with its scheduler) until the backfill's relay jobs have all run. */
  const runBackfill = async (parsedCronItems: ParsedCronItem[], taskList: TaskList) => {
    const { graphileSchema, uniqueSchema } = schemas.current();
    runner = await run({
      pgPool: pool,
      schema: graphileSchema,
      taskList,
      parsedCronItems,
      logger: quietLogger,
      concurrency: 4,
      pollInterval: 100,
      preset: { extends: [makeUniqueJobsPreset({ uniqueSchema })] },
    });
    const deadline = Date.now() + 40_000;
    for (;;) {
      const { rows } = await pool.query<{ scheduled: boolean; relays: number }>(
        `select (select last_execution is not null from "${graphileSchema}"._private_known_crontabs where identifier = 'tick') as scheduled,
                (select count(*)::int from "${graphileSchema}"._private_jobs j join "${graphileSchema}"._private_tasks t on t.id = j.task_id
                 where t.identifier = $1) as relays`,
        [UNIQUE_CRON_TASK_IDENTIFIER],
      );
      if (rows[0]!.scheduled && rows[0]!.relays === 0) break;
      if (Date.now() > deadline) throw new Error(`the backfill's relay jobs did not all run: ${JSON.stringify(rows[0])}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await runner.stop();
    runner = null;
  };
  const relayTask = () => {
    const { graphileSchema, uniqueSchema } = schemas.current();
    return makeUniqueCronTask({ uniqueSchema, workerSchema: graphileSchema });
  };
  const everyMinute = { task: 'tick', match: '* * * * *', identifier: 'tick', options: { backfillPeriod: HOUR }, payload: { report: 'x' } };

  it('control: Graphile alone backfills one job per tick', async () => {
    await knownSince2HoursAgo('tick');
    await runBackfill(parseCronItems([everyMinute]), {});
    expect((await jobsOf('tick')).length).to.be.greaterThan(50);
  });

  it('an hour of ticks under { keys: ["type"], on_conflict: "ignore" } leaves one job, with the payload Graphile gives a cron job', async () => {
    await knownSince2HoursAgo('tick');
    const items = uniqueCronItems([everyMinute], { keys: ['type'], on_conflict: 'ignore' });
    expect(items[0]!.identifier, 'the tick claim and backfill history stay the item’s').to.equal('tick');
    await runBackfill(items, { [UNIQUE_CRON_TASK_IDENTIFIER]: relayTask() });
    const jobs = await jobsOf('tick');
    expect(jobs).to.have.length(1);
    expect(jobs[0]!.payload).to.deep.include({ report: 'x' });
    expect(jobs[0]!.payload._cron.backfilled).to.equal(true);
    expect(jobs[0]!.run_at.toISOString(), 'run_at is the tick').to.equal(jobs[0]!.payload._cron.ts);
    const { rows } = await pool.query(`select fingerprint, policy from "${schemas.current().uniqueSchema}".jobs where job_id = $1`, [
      jobs[0]!.id,
    ]);
    expect(rows[0].fingerprint).to.match(/^[0-9a-f]{64}$/);
  });

  it('under reject, a refused tick ends its relay successfully (no relay left to retry), one job', async () => {
    await knownSince2HoursAgo('tick');
    await runBackfill(uniqueCronItems([everyMinute], { keys: ['type'] }), { [UNIQUE_CRON_TASK_IDENTIFIER]: relayTask() });
    expect(await jobsOf('tick')).to.have.length(1);
    const { rows } = await pool.query(
      `select count(*)::int as n from "${schemas.current().graphileSchema}"._private_jobs where last_error is not null`,
    );
    expect(rows[0].n, 'no relay failed').to.equal(0);
  });

  it('an item’s Graphile jobKey becomes its fromGraphileWorker policy: one job, updated in place to the latest tick', async () => {
    await knownSince2HoursAgo('tick');
    const items = uniqueCronItems([{ ...everyMinute, options: { ...everyMinute.options, jobKey: 'nightly-report' } }]);
    expect(items[0]!.options.jobKey, "Graphile's own key is not used as well").to.equal(undefined);
    await runBackfill(items, { [UNIQUE_CRON_TASK_IDENTIFIER]: relayTask() });
    const jobs = await jobsOf('tick');
    expect(jobs).to.have.length(1);
    expect(jobs[0]!.revision, 'updated in place by the later ticks').to.be.greaterThan(0);
    expect(jobs[0]!.run_at.toISOString()).to.equal(jobs[0]!.payload._cron.ts);
  });

  it('refuses a policy beside a jobKey, and a bad policy, naming the item; leaves items without a policy to Graphile', () => {
    const refused = (call: () => unknown) => {
      try {
        call();
      } catch (error) {
        return error as InvalidJobInputError;
      }
      throw new Error('expected a refusal');
    };
    const keyed = refused(() => uniqueCronItems([{ ...everyMinute, options: { jobKey: 'k' } }], { keys: ['type'] }));
    expect(keyed).to.be.instanceOf(InvalidJobInputError);
    expect(keyed.issues.map((issue) => issue.path)).to.deep.equal(['[0].options.jobKey']);
    const bad = refused(() => uniqueCronItems([everyMinute], { keys: ['type'], on_conflict: 'nope' as never }));
    expect(bad.issues.map((issue) => issue.path)).to.deep.equal(['[0].unique.on_conflict']);
    const [left] = uniqueCronItems([everyMinute], () => null);
    expect(left!.task).to.equal('tick');
    const [plain] = uniqueCronItems([everyMinute]);
    expect(plain!.task, 'no jobKey, no policy: Graphile’s item').to.equal('tick');
  });
});
