/**
 * Policies registered per task identifier: `makeUniqueWorkerUtils({ policies })`,
 * `withUniqueHelpers(tasks, { policies })` and `addJobWithClient(…, { policies })` apply them to
 * every add of that identifier, one without a spec included; a spec naming another policy (or
 * none) is refused. Real PostgreSQL.
 */
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { runOnce } from 'graphile-worker';
import type pg from 'pg';
import { InvalidJobInputError, type EnqueueResult } from '../../src/index.js';
import {
  addJobWithClient,
  makeUniqueJobsPreset,
  makeUniqueWorkerUtils,
  withUniqueHelpers,
  type UniqueWorkerUtils,
} from '../../adapters/graphile-worker/index.js';
import { quietLogger } from '../conformance/subjects/graphile-worker.js';
import { isolatePerTest, makePool } from './graphile-worker-fixture.js';
import { rejection } from '../conformance/suite-context.js';

const FILE = fileURLToPath(import.meta.url);
const daily = { keys: ['type'], on_conflict: 'ignore' } as const;
const policies = { report_build: daily };

describe('graphile-worker adapter: policies registered per task identifier', function () {
  this.timeout(30_000);
  const schemas = isolatePerTest(FILE);
  let pool: pg.Pool;
  let utils: UniqueWorkerUtils | null;

  beforeEach(() => {
    pool = makePool(4);
    utils = null;
  });
  afterEach(async () => {
    await utils?.release();
    await pool.end();
  });

  const makeUtils = async () => {
    const { graphileSchema, uniqueSchema } = schemas.current();
    utils = await makeUniqueWorkerUtils({ pgPool: pool, schema: graphileSchema, uniqueSchema, logger: quietLogger, policies });
    return utils;
  };
  const jobCount = async (): Promise<number> => {
    const { rows } = await pool.query<{ n: number }>(`select count(*)::int as n from ${schemas.current().graphileSchema}._private_jobs`);
    return rows[0]!.n;
  };

  it('utils: addJob without a spec, and addJobs, get the registered policy; other identifiers stay plain', async () => {
    const u = await makeUtils();
    const first = (await u.addJob('report_build', { day: 1 })) as unknown as EnqueueResult;
    const second = (await u.addJob('report_build', { day: 2 })) as unknown as EnqueueResult;
    expect(first.outcome).to.equal('created');
    expect(second).to.deep.include({ outcome: 'deduplicated' });
    expect(second.job.id).to.equal(first.job.id);
    const plain = await u.addJob('report_mail', { day: 1 });
    expect(plain).to.not.have.property('outcome');
    const batch = (await u.addJobs([
      { identifier: 'report_build', payload: {} },
      { identifier: 'report_mail', payload: {} },
    ])) as unknown as EnqueueResult[];
    expect(batch.map((result) => result.outcome)).to.deep.equal(['deduplicated', 'created']);
    expect((await u.explainUnique('report_build', {}, {} as never)).outcome).to.equal('deduplicated');
    expect((await u.findUniqueJob('report_build', {}, {} as never))?.id).to.equal(first.job.id);
    expect(await jobCount()).to.equal(3);
  });

  it('utils: a spec naming another policy or none is refused naming spec.unique; the same policy is accepted', async () => {
    const u = await makeUtils();
    await u.addJob('report_build', {});
    for (const unique of [null, { keys: ['type', 'args'] } as const]) {
      const error = await rejection(u.addJob('report_build', { n: 1 }, { unique }));
      expect(error).to.be.instanceOf(InvalidJobInputError);
      expect((error as unknown as InvalidJobInputError).issues[0]!.path).to.equal('spec.unique');
    }
    const batchError = await rejection(u.addJobs([{ identifier: 'report_build', payload: {}, unique: null }]));
    expect((batchError as unknown as InvalidJobInputError).issues[0]!.path).to.equal('[0].unique');
    const same = await u.addJob('report_build', { n: 2 }, { unique: { keys: ['type'], on_conflict: 'ignore' } });
    expect(same.outcome).to.equal('deduplicated');
    expect(await jobCount()).to.equal(1);
  });

  it('validates the policies when the utils are made, naming the identifier', async () => {
    const { graphileSchema, uniqueSchema } = schemas.current();
    const error = await rejection(
      makeUniqueWorkerUtils({
        pgPool: pool,
        schema: graphileSchema,
        uniqueSchema,
        logger: quietLogger,
        policies: { report_build: { keys: ['type', 'argz' as 'args'] } },
      }),
    );
    expect(error).to.be.instanceOf(InvalidJobInputError);
    expect((error as unknown as InvalidJobInputError).issues[0]!.path).to.equal('policies["report_build"].keys[1]');
  });

  it('withUniqueHelpers: helpers.addJob without a spec gets the registered policy', async () => {
    const u = await makeUtils();
    const { graphileSchema, uniqueSchema } = schemas.current();
    const outcomes: string[] = [];
    await u.addJob('parent', { n: 1 });
    await u.addJob('parent', { n: 2 });
    const taskList = withUniqueHelpers(
      {
        parent: async (_payload, helpers) => {
          outcomes.push(((await helpers.addJob('report_build', { at: Date.now() })) as unknown as EnqueueResult).outcome);
        },
        report_build: async () => undefined,
      },
      { uniqueSchema, workerSchema: graphileSchema, policies },
    );
    const preset = { extends: [makeUniqueJobsPreset({ uniqueSchema })] };
    // One job per run: the parents first (lower ids), the report jobs after them.
    await runOnce({ pgPool: pool, schema: graphileSchema, taskList, logger: quietLogger, preset, concurrency: 1 });
    expect(outcomes.sort()).to.deep.equal(['created', 'deduplicated']);
  });

  it('addJobWithClient: the registered policy applies inside the caller transaction', async () => {
    await makeUtils();
    const { graphileSchema, uniqueSchema } = schemas.current();
    const client = await pool.connect();
    try {
      await client.query('begin');
      const options = { workerSchema: graphileSchema, uniqueSchema, policies };
      const first = (await addJobWithClient(client, 'report_build', {}, undefined, options)) as unknown as EnqueueResult;
      const again = (await addJobWithClient(client, 'report_build', { n: 1 }, undefined, options)) as unknown as EnqueueResult;
      const error = await rejection(addJobWithClient(client, 'report_build', {}, { unique: null }, options));
      await client.query('commit');
      expect([first.outcome, again.outcome]).to.deep.equal(['created', 'deduplicated']);
      expect((error as unknown as InvalidJobInputError).issues[0]!.path).to.equal('spec.unique');
    } finally {
      client.release();
    }
    expect(await jobCount()).to.equal(1);
  });
});
