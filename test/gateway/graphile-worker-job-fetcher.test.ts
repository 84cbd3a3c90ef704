/**
 * Contract test of server/graphile-worker-job-fetcher.ts: the gateway's HTTP workers take, renew,
 * complete and fail jobs with Graphile Worker's own lock, mirroring Graphile's getJobs,
 * completeJobs and failJobs queries. Each test names the Graphile behaviour it pins; a failure
 * means the installed graphile-worker changed it, and server/sql/gateway-*.sql must follow.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { runOnce } from 'graphile-worker';
import { createGraphileJobFetcher } from '../../server/graphile-worker-job-fetcher.js';
import { installGatewaySchema } from '../../server/graphile-worker-gateway-schema.js';
import { GraphileWorkerSql } from '../../adapters/graphile-worker/graphile-worker-sql.js';
import { makeUniqueWorkerUtils } from '../../adapters/graphile-worker/index.js';
import { databaseUrl, makeSubjectPool, quietLogger } from '../conformance/subjects/graphile-worker.js';
import { RUN_SALT } from '../run-salt.js';

const graphileSql = (file: string) =>
  readFileSync(join(dirname(createRequire(import.meta.url).resolve('graphile-worker')), 'sql', file), 'utf8').replace(/\s+/g, ' ');

describe('Graphile host contract: the gateway job fetcher (gateway-*.sql)', function () {
  this.timeout(20_000);
  const schemas = { workerSchema: `gwt_${RUN_SALT}_fetcher_gw`, uniqueSchema: `gwt_${RUN_SALT}_fetcher_ou` };
  const pool = makeSubjectPool(databaseUrl(), 4);
  let utils: Awaited<ReturnType<typeof makeUniqueWorkerUtils>>;
  const fetcher = createGraphileJobFetcher(pool, schemas);
  const row = async (id: string) =>
    (
      await pool.query(
        `select attempts, max_attempts, locked_by, locked_at, run_at, last_error from "${schemas.workerSchema}"._private_jobs where id = $1`,
        [id],
      )
    ).rows[0];

  before(async () => {
    utils = await makeUniqueWorkerUtils({ pgPool: pool, schema: schemas.workerSchema, uniqueSchema: schemas.uniqueSchema });
    const client = await pool.connect();
    try {
      await installGatewaySchema(client, GraphileWorkerSql.for(schemas));
    } finally {
      client.release();
    }
  });
  beforeEach(async () => {
    await pool.query(`truncate "${schemas.workerSchema}"._private_jobs, "${schemas.workerSchema}"._private_job_queues`);
  });
  after(async () => {
    await utils?.release();
    await pool.end();
  });

  it("Graphile's getJobs claims by is_available, run_at <= now, for update skip locked, attempts + 1, locked_by, locked_at (as gateway-fetch-job.sql)", () => {
    const text = graphileSql('getJobs.js');
    for (const clause of [
      'where jobs.is_available = true',
      'and run_at <= ${now}',
      'order by priority asc, run_at asc',
      'for update skip locked',
      'attempts = jobs.attempts + 1, locked_by = $1::text, locked_at = ${now}',
    ]) {
      expect(text, clause).to.include(clause);
    }
  });

  it("Graphile's completeJobs deletes the row (the gateway also checks it holds it); failJobs sets last_error, Graphile's backoff and unlocks (as gateway-complete-job.sql, gateway-fail-job.sql)", () => {
    expect(graphileSql('completeJobs.js')).to.include('delete from ${escapedWorkerSchema}._private_jobs as jobs where id = $1::bigint');
    const fail = graphileSql('failJobs.js');
    for (const clause of [
      'last_error = $2::text',
      "run_at = greatest(now(), run_at) + (exp(least(attempts, 10)) * interval '1 second')",
      'locked_by = null',
      'locked_at = null',
    ]) {
      expect(fail, clause).to.include(clause);
    }
  });

  it('a claim takes the job as a Graphile worker would, and a Graphile runner then skips it', async () => {
    const job = await utils.addJob('contract_task', { n: 1 });
    const claimed = await fetcher.claim('default');
    expect(claimed).to.deep.equal({ jobId: String(job.id), ojsId: null });
    expect(await row(String(job.id))).to.include({ attempts: 1, locked_by: fetcher.owner });
    const ran: unknown[] = [];
    await runOnce({
      pgPool: pool,
      schema: schemas.workerSchema,
      taskList: { contract_task: async (p: unknown) => void ran.push(p) },
      logger: quietLogger,
    } as never);
    expect(ran).to.deep.equal([]);
    expect(await fetcher.complete(String(job.id))).to.equal(true);
    expect(await row(String(job.id))).to.equal(undefined);
  });

  it("a job a Graphile worker holds is never claimed, and another owner's lock cannot be completed, failed or renewed", async () => {
    const job = await utils.addJob('contract_task', { n: 2 });
    await pool.query(
      `update "${schemas.workerSchema}"._private_jobs set locked_by = 'worker-other', locked_at = now(), attempts = 1 where id = $1`,
      [job.id],
    );
    expect(await fetcher.claim('default')).to.equal(null);
    expect(await fetcher.complete(String(job.id))).to.equal(false);
    expect(await fetcher.fail(String(job.id), 'x', { permanent: false, retryDelayMs: null })).to.equal(false);
    expect(await fetcher.touch(String(job.id))).to.equal(false);
    expect(await row(String(job.id))).to.include({ locked_by: 'worker-other' });
  });

  it('a failure unlocks and schedules the retry (its own delay or Graphile backoff); a permanent one uses the attempts up', async () => {
    const job = await utils.addJob('contract_task', { n: 3 }, { maxAttempts: 5 });
    await fetcher.claim('default');
    expect(await fetcher.fail(String(job.id), 'boom', { permanent: false, retryDelayMs: 60_000 })).to.equal(true);
    const failed = await row(String(job.id));
    expect(failed).to.include({ attempts: 1, locked_by: null, locked_at: null, last_error: 'boom' });
    expect(failed.run_at.getTime()).to.be.greaterThan(Date.now() + 30_000);
    await pool.query(`update "${schemas.workerSchema}"._private_jobs set run_at = now() where id = $1`, [job.id]);
    await fetcher.claim('default');
    expect(await fetcher.fail(String(job.id), 'fatal', { permanent: true, retryDelayMs: null })).to.equal(true);
    expect(await row(String(job.id))).to.include({ attempts: 5, max_attempts: 5, locked_by: null });
  });
});
