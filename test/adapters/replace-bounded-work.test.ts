/**
 * Work per add never grows with a key's history (§5.2): a replace supersedes only the jobs it
 * meets, a job already cancelled is never cancelled again, and what each backend keeps under the
 * key stays bounded. Driven on every backend with a policy that counts `cancelled`, the case
 * where every replaced job used to stay a candidate: 2,000 single replaces, then one batch of
 * 1,000. Counts of work, never timings: each add's outcome names exactly the jobs it superseded
 * (before, the n-th add re-cancelled n - 1), and the key's stored footprint (BullMQ's index
 * entries, Graphile's ledger records under the key) is read after every 250 adds.
 */
import { expect } from 'chai';
import { fileURLToPath } from 'node:url';
import type { BullMQBackend } from '../../adapters/bullmq/index.js';
import { createMemoryBackend } from '../../adapters/memory/index.js';
import type { EnqueueResult, JobInput, OjsJob } from '../../src/index.js';
import createBullMQSubject from '../conformance/subjects/bullmq.js';
import { createGraphileWorkerSubject } from '../conformance/subjects/graphile-worker.js';
import { indexEntries, useRedisPrefix } from './bullmq-test-redis.js';
import { isolatePerTest } from './graphile-worker-fixture.js';

const FILE = fileURLToPath(import.meta.url);
const SINGLE = 2_000;
const BATCH = 1_000;
const unique = {
  keys: ['type'],
  states: ['available', 'active', 'scheduled', 'retryable', 'pending', 'cancelled'],
  on_conflict: 'replace',
} as const;
const job = (n: number): JobInput => ({ type: 'avatar.resize', args: { n }, unique });

interface Target {
  enqueue(job: JobInput): Promise<EnqueueResult>;
  enqueueMany(jobs: readonly JobInput[]): Promise<EnqueueResult[]>;
  getJob(id: string): Promise<OjsJob | null>;
  /** How many records the backend keeps under the key (BullMQ: index entries; Graphile: ledger records). */
  footprint?(key: string): Promise<number>;
}

/** The ids an add superseded: its `replaced` and `also_replaced`, oldest first. */
function superseded(result: EnqueueResult): string[] {
  if (result.outcome !== 'replaced') return [];
  return [result.replaced.id, ...(result.also_replaced ?? []).map((j) => j.id)];
}

/** The upper bound of what a backend may keep under one key here: the live job, plus the superseded entries a re-sent add may still need (at most 8, kept for the 60 s replay grace), plus the one just superseded. */
const FOOTPRINT_MAX = 10;

async function driveReplaces(target: Target): Promise<void> {
  const first = await target.enqueue(job(0));
  expect(first.outcome).to.equal('created');
  const key = first.job.uniqueness_key!;
  let previous = first.job;
  const footprints: number[] = [];
  for (let n = 1; n < SINGLE; n++) {
    const result = await target.enqueue(job(n));
    // Each add meets only the live job before it: never the jobs replaced earlier.
    expect(superseded(result), `add ${n}`).to.deep.equal([previous.id]);
    if (result.outcome === 'replaced') expect(result.replaced).to.include({ state: 'cancelled', replaced_by: result.job.id });
    previous = result.job;
    if (target.footprint && n % 250 === 0) footprints.push(await target.footprint(key));
  }
  const firstReplaced = await target.getJob(first.job.id);
  expect(firstReplaced).to.include({ state: 'cancelled' });

  const results = await target.enqueueMany(Array.from({ length: BATCH }, (_, i) => job(SINGLE + i)));
  results.forEach((result, i) => {
    expect(superseded(result), `batch job ${i}`).to.deep.equal([i === 0 ? previous.id : results[i - 1]!.job.id]);
  });
  if (target.footprint) footprints.push(await target.footprint(key));
  for (const footprint of footprints) expect(footprint).to.be.at.most(FOOTPRINT_MAX);

  // Never cancelled again: the first job still carries its first cancellation.
  expect(await target.getJob(first.job.id)).to.deep.equal(firstReplaced);
}

describe('§5.2 replace: bounded work per add (2,000 replaces of one key counting cancelled, then a batch of 1,000)', function () {
  this.timeout(180_000);

  describe('memory', function () {
    it('each add supersedes only the job before it; a replaced job is never cancelled again', async function () {
      await driveReplaces(createMemoryBackend());
    });
  });

  describe('bullmq', function () {
    const ctx = useRedisPrefix(FILE);
    it('each add supersedes only the job before it; the key keeps at most 10 index entries', async function () {
      const subject = await createBullMQSubject({ prefix: ctx.prefix });
      const backend = subject.backend as BullMQBackend;
      try {
        await driveReplaces({
          enqueue: (j) => backend.enqueue(j),
          enqueueMany: (j) => backend.enqueueMany(j),
          getJob: (id) => backend.getJob(id),
          footprint: async (key) => (await indexEntries(ctx.redis, `${ctx.prefix}:ojs:global:index`, key)).length,
        });
      } catch (error) {
        await subject.close({ passed: false });
        throw error;
      }
      await subject.close({ passed: true });
    });
  });

  describe('graphile-worker', function () {
    const schemas = isolatePerTest(FILE);
    it('each add supersedes only the job before it; the key keeps at most its live job and its head record in the ledger', async function () {
      const subject = await createGraphileWorkerSubject({ ...schemas.current() });
      try {
        const ledger = `"${schemas.current().uniqueSchema}".jobs`;
        await driveReplaces({
          enqueue: (j) => subject.backend.enqueue(j),
          enqueueMany: (j) => subject.backend.enqueueMany(j),
          getJob: (id) => subject.backend.getJob(id),
          footprint: async (key) =>
            Number((await subject.pool.query(`select count(*) from ${ledger} where fingerprint = $1`, [key])).rows[0].count),
        });
      } finally {
        await subject.close();
      }
    });
  });
});
