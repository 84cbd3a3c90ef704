/**
 * The key lookups on Graphile Worker: findUniqueJob (the job holding a key) and releaseUniqueKey
 * (the next enqueue of the key inserts), on the backend and on makeUniqueWorkerUtils.
 */
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import type pg from 'pg';
import { isInvalidJobInputError, type EnqueueResult } from '../../src/index.js';
import { makeUniqueWorkerUtils, type UniqueWorkerUtils } from '../../adapters/graphile-worker/index.js';
import { createGraphileWorkerSubject, quietLogger, type GraphileWorkerSubject } from '../conformance/subjects/graphile-worker.js';
import { isolatePerTest, makePool } from './graphile-worker-fixture.js';
import { rejection } from '../conformance/suite-context.js';

const FILE = fileURLToPath(import.meta.url);

describe('graphile-worker: key lookups', function () {
  this.timeout(30_000);
  const schemas = isolatePerTest(FILE);
  let pool: pg.Pool;
  let subject: GraphileWorkerSubject | null;
  let utils: UniqueWorkerUtils | null;

  beforeEach(() => {
    pool = makePool(4);
    subject = null;
    utils = null;
  });
  afterEach(async () => {
    await subject?.close();
    await utils?.release();
    await pool.end();
  });

  const makeSubject = async () => (subject = await createGraphileWorkerSubject({ ...schemas.current() }));

  describe('findUniqueJob', () => {
    it('by job: the job the enqueue would meet; by key: the oldest unfinished job; null for a key nobody holds', async () => {
      const s = await makeSubject();
      const unique = { keys: ['type'], states: ['available', 'scheduled', 'active', 'completed'] } as const;
      const job = { type: 'f', args: {}, unique };
      expect(await s.backend.findUniqueJob(job)).to.equal(null);
      const first = (await s.backend.enqueue(job)).job;
      expect(await s.backend.findUniqueJob(job)).to.deep.include({ id: first.id, state: 'available' });
      expect(await s.backend.findUniqueJob({ uniqueness_key: first.uniqueness_key! })).to.deep.include({ id: first.id });
      await (await s.start(first.id)).complete();
      // Its policy still counts the completed job; by key alone, nothing unfinished holds it.
      expect(await s.backend.findUniqueJob(job)).to.deep.include({ id: first.id, state: 'completed' });
      expect(await s.backend.findUniqueJob({ uniqueness_key: first.uniqueness_key! })).to.equal(null);
      expect(await s.backend.findUniqueJob({ ...job, unique: { keys: ['type'] } }), 'a policy that does not count completed').to.equal(
        null,
      );
    });

    it('refuses a job without a policy and an empty key, naming the field', async () => {
      const s = await makeSubject();
      const noPolicy = await rejection(s.backend.findUniqueJob({ type: 'f', args: {} }));
      expect(isInvalidJobInputError(noPolicy) && noPolicy.issues.map((issue) => issue.path)).to.deep.equal(['unique']);
      const empty = await rejection(s.backend.releaseUniqueKey({ uniqueness_key: '' }));
      expect(isInvalidJobInputError(empty) && empty.issues.map((issue) => issue.path)).to.deep.equal(['uniqueness_key']);
    });
  });

  describe('releaseUniqueKey', () => {
    it('the next enqueue inserts; the released job stays, runs, reports its key, and is no longer counted', async () => {
      const s = await makeSubject();
      const job = { type: 'rel', args: {}, unique: { keys: ['type'], on_conflict: 'ignore' } } as const;
      const first = (await s.backend.enqueue(job)).job;
      expect(await s.backend.releaseUniqueKey(job)).to.equal(1);
      const second = await s.backend.enqueue(job);
      expect(second.outcome).to.equal('created');
      expect(second.job.id).to.not.equal(first.id);
      expect(await s.backend.getJob(first.id)).to.deep.include({ state: 'available', uniqueness_key: first.uniqueness_key });
      expect(await s.backend.findUniqueJob(job)).to.deep.include({ id: second.job.id });
      // The new job holds the key as any first job does.
      expect(await s.backend.enqueue(job)).to.deep.include({ outcome: 'deduplicated' });
      expect((await (await s.start(first.id)).complete()).state).to.equal('completed');
      expect(await s.backend.findUniqueJob({ uniqueness_key: first.uniqueness_key! })).to.deep.include({ id: second.job.id });
      expect(await s.backend.releaseUniqueKey({ uniqueness_key: 'f'.repeat(64) }), 'nothing holds it').to.equal(0);
    });

    it('makeUniqueWorkerUtils: findUniqueJob and releaseUniqueKey named as addJob names the job, or by key', async () => {
      const { graphileSchema, uniqueSchema } = schemas.current();
      utils = await makeUniqueWorkerUtils({ pgPool: pool, schema: graphileSchema, uniqueSchema, logger: quietLogger });
      const spec = { unique: { keys: ['type', 'args'], on_conflict: 'ignore' } } as const;
      const first = (await utils.addJob('mail', { to: 'a' }, spec)) as EnqueueResult;
      expect(await utils.findUniqueJob('mail', { to: 'a' }, spec)).to.deep.include({ id: first.job.id });
      expect(await utils.findUniqueJob('mail', { to: 'b' }, spec)).to.equal(null);
      expect(await utils.releaseUniqueKey({ uniqueness_key: first.job.uniqueness_key! })).to.equal(1);
      const again = (await utils.addJob('mail', { to: 'a' }, spec)) as EnqueueResult;
      expect(again.outcome).to.equal('created');
      expect(await utils.releaseUniqueKey('mail', { to: 'a' }, spec)).to.equal(1);
      const refused = await rejection(utils.findUniqueJob('mail', { to: 'a' }, { unique: { on_conflict: 'nope' } } as never));
      expect(isInvalidJobInputError(refused) && refused.issues.map((issue) => issue.path)).to.deep.equal(['unique.on_conflict']);
    });
  });
});
