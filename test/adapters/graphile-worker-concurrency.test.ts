/**
 * §8.1 strong uniqueness on Graphile Worker, under real contention: 200 concurrent enqueues of
 * one uniqueness key over a pool of 20 connections, 10 rounds per strategy. Every round must end
 * with exactly one live job for the key, and the outcomes must account for every call.
 *
 * The control: with the head-row lock removed from lock_and_read, the reject rounds admit
 * several jobs (checked by hand while writing this; see docs/design/graphile-worker.md).
 */
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import type pg from 'pg';
import { isDuplicateJobError, type ConflictStrategy, type EnqueueResult } from '../../src/index.js';
import { createGraphileWorkerBackend, type GraphileWorkerBackend } from '../../adapters/graphile-worker/index.js';
import { isolatePerTest, makePool } from './graphile-worker-fixture.js';

const FILE = fileURLToPath(import.meta.url);
const CALLS = 200;
const ROUNDS = 10;
const POOL_SIZE = 20;

describe('graphile-worker adapter: concurrency (§8.1)', function () {
  this.timeout(120_000);
  const schemas = isolatePerTest(FILE);
  let pool: pg.Pool;
  let backend: GraphileWorkerBackend;

  beforeEach(async () => {
    pool = makePool(POOL_SIZE);
    const { graphileSchema, uniqueSchema } = schemas.current();
    backend = createGraphileWorkerBackend({ pgPool: pool, uniqueSchema, workerSchema: graphileSchema });
    await backend.ready();
  });
  afterEach(async () => {
    await backend.close();
    await pool.end();
  });

  const liveJobs = async (key: string) => {
    const { uniqueSchema, graphileSchema } = schemas.current();
    const { rows } = await pool.query<{ n: number }>(
      `select count(*)::int as n from "${uniqueSchema}".jobs l join "${graphileSchema}"._private_jobs j on j.id = l.job_id
       where l.fingerprint = $1 and l.terminal_state is null`,
      [key],
    );
    return rows[0]!.n;
  };

  const round = async (strategy: ConflictStrategy, n: number) => {
    const job = { type: 'contended', args: { round: n, strategy }, unique: { keys: ['type', 'args'], on_conflict: strategy } } as const;
    const settled = await Promise.allSettled(Array.from({ length: CALLS }, () => backend.enqueue(job)));
    const results = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
    const errors = settled.flatMap((s) => (s.status === 'rejected' ? [s.reason as unknown] : []));
    const unexpected = errors.filter((error) => !isDuplicateJobError(error));
    expect(unexpected, `round ${n}: unexpected errors`).to.deep.equal([]);
    const key = (results[0] ?? (errors[0] as { uniquenessKey: string } | undefined))?.valueOf() as
      EnqueueResult | { uniquenessKey: string };
    const uniquenessKey = 'job' in key ? key.job.uniqueness_key! : key.uniquenessKey;
    return { results, errors, live: await liveJobs(uniquenessKey) };
  };

  const count = (results: EnqueueResult[], outcome: EnqueueResult['outcome']) => results.filter((r) => r.outcome === outcome).length;

  it(`reject: exactly one of ${CALLS} concurrent enqueues succeeds, in each of ${ROUNDS} rounds`, async () => {
    for (let n = 0; n < ROUNDS; n++) {
      const { results, errors, live } = await round('reject', n);
      expect({ round: n, created: results.length, duplicates: errors.length, live }).to.deep.equal({
        round: n,
        created: 1,
        duplicates: CALLS - 1,
        live: 1,
      });
    }
  });

  it(`ignore: one job is created and the other ${CALLS - 1} calls get its id, in each of ${ROUNDS} rounds`, async () => {
    for (let n = 0; n < ROUNDS; n++) {
      const { results, errors, live } = await round('ignore', n);
      const created = results.filter((r) => r.outcome === 'created');
      expect({ round: n, created: created.length, errors: errors.length, live }).to.deep.equal({
        round: n,
        created: 1,
        errors: 0,
        live: 1,
      });
      const ids = new Set(results.map((r) => r.job.id));
      expect([...ids], `round ${n}: every call names the one job`).to.deep.equal([created[0]!.job.id]);
    }
  });

  it(`replace: every call replaces its predecessor and one live job remains, in each of ${ROUNDS} rounds`, async () => {
    for (let n = 0; n < ROUNDS; n++) {
      const { results, errors, live } = await round('replace', n);
      expect({
        round: n,
        created: count(results, 'created'),
        replaced: count(results, 'replaced'),
        errors: errors.length,
        live,
      }).to.deep.equal({
        round: n,
        created: 1,
        replaced: CALLS - 1,
        errors: 0,
        live: 1,
      });
      // The replacements form one chain: each job was replaced at most once.
      const replacedIds = results.flatMap((r) =>
        r.outcome === 'replaced' ? [r.replaced.id, ...(r.also_replaced ?? []).map((j) => j.id)] : [],
      );
      expect(new Set(replacedIds).size, `round ${n}: no job replaced twice`).to.equal(replacedIds.length);
    }
  });
});
