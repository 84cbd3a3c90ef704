/**
 * Duplicate counts on Graphile Worker (docs/decisions.md, "Duplicate counts"), beyond the
 * conformance section every entry point runs: the count is taken once per request token (the same
 * enqueue run again is not counted twice), and reclaim deletes the counts of the records it deletes;
 * with `countDuplicates` on. Off (the default), no duplicate writes a count.
 */
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import type pg from 'pg';
import { createGraphileWorkerBackend, type GraphileWorkerBackend } from '../../adapters/graphile-worker/index.js';
import { isolatePerTest, makePool } from './graphile-worker-fixture.js';

const FILE = fileURLToPath(import.meta.url);

describe('graphile-worker adapter: duplicate counts', function () {
  this.timeout(20_000);
  const schemas = isolatePerTest(FILE);
  let pool: pg.Pool;
  let backend: GraphileWorkerBackend;

  beforeEach(async () => {
    pool = makePool(2);
    const { graphileSchema, uniqueSchema } = schemas.current();
    backend = await createGraphileWorkerBackend({ pgPool: pool, workerSchema: graphileSchema, uniqueSchema, countDuplicates: true });
  });
  afterEach(async () => {
    await backend.close();
    await pool.end();
  });

  const graphileIdOf = async (id: string): Promise<string> =>
    (await pool.query<{ job_id: string }>(`select job_id::text from ${schemas.current().uniqueSchema}.jobs where ojs_id = $1`, [id]))
      .rows[0]!.job_id;
  const countDuplicate = async (jobId: string, token: string): Promise<unknown> =>
    (
      await pool.query<{ result: unknown }>(
        `select ${schemas.current().uniqueSchema}.count_duplicate($1::bigint, $2::uuid, false) as result`,
        [jobId, token],
      )
    ).rows[0]!.result;

  it('the same request token counts once, and answers the count as it is; another token counts again', async () => {
    const unique = { keys: ['type'], on_conflict: 'ignore' } as const;
    const first = await backend.enqueue({ type: 'digest', args: {}, unique });
    const again = await backend.enqueue({ type: 'digest', args: {}, unique });
    expect(again.job).to.include({ id: first.job.id, duplicate_count: 1 });
    const jobId = await graphileIdOf(first.job.id);
    const token = randomUUID();
    const counted = (await countDuplicate(jobId, token)) as { duplicate_count: number; last_duplicate_at: number };
    expect(counted.duplicate_count).to.equal(2);
    expect(await countDuplicate(jobId, token), 'the same enqueue run again').to.deep.equal(counted);
    expect(((await countDuplicate(jobId, randomUUID())) as { duplicate_count: number }).duplicate_count).to.equal(3);
    const read = await backend.getJob(first.job.id);
    expect(read).to.include({ duplicate_count: 3 });
    // The lookup of the key's holder reads it too.
    expect(await backend.findUniqueJob({ type: 'digest', args: {}, unique })).to.include({
      duplicate_count: 3,
      last_duplicate_at: read!.last_duplicate_at,
    });
  });

  it('countDuplicates off (the default): ignore and reject count nothing, no duplicate_counts row, neither view field', async () => {
    const { graphileSchema, uniqueSchema } = schemas.current();
    const quiet = createGraphileWorkerBackend({ pgPool: pool, workerSchema: graphileSchema, uniqueSchema });
    try {
      const ignore = { keys: ['type'], on_conflict: 'ignore' } as const;
      const first = await quiet.enqueue({ type: 'digest', args: {}, unique: ignore });
      const again = await quiet.enqueue({ type: 'digest', args: {}, unique: ignore });
      expect(again.job.id).to.equal(first.job.id);
      expect(again.job).to.not.have.any.keys('duplicate_count', 'last_duplicate_at');
      // The locked path too: x_update answers from under the key's lock.
      const update = { keys: ['type'], on_conflict: 'ignore', x_update: { available: ['args'] } } as const;
      await quiet.enqueue({ type: 'other', args: { v: 1 }, unique: update });
      expect((await quiet.enqueue({ type: 'other', args: { v: 2 }, unique: update })).outcome).to.equal('updated');
      const reject = { keys: ['type'], on_conflict: 'reject' } as const;
      const held = await quiet.enqueue({ type: 'mail', args: {}, unique: reject });
      expect(await quiet.enqueue({ type: 'mail', args: {}, unique: reject }).catch((error: unknown) => error)).to.have.property(
        'code',
        'duplicate',
      );
      const rows = await pool.query<{ n: number }>(`select count(*)::int as n from ${uniqueSchema}.duplicate_counts`);
      expect(rows.rows[0]!.n).to.equal(0);
      for (const id of [first.job.id, held.job.id])
        expect(await quiet.getJob(id)).to.not.have.any.keys('duplicate_count', 'last_duplicate_at');
      expect(await quiet.findUniqueJob({ type: 'digest', args: {}, unique: ignore })).to.not.have.any.keys('duplicate_count');
    } finally {
      await quiet.close();
    }
  });

  it("reclaim deletes a reclaimed record's count with it", async () => {
    const unique = { keys: ['type'], on_conflict: 'ignore' } as const;
    const first = await backend.enqueue({ type: 'digest', args: {}, unique });
    await backend.enqueue({ type: 'digest', args: {}, unique });
    await backend.cancel(first.job.id);
    const counts = async () =>
      (await pool.query<{ n: number }>(`select count(*)::int as n from ${schemas.current().uniqueSchema}.duplicate_counts`)).rows[0]!.n;
    expect(await counts()).to.equal(1);
    expect((await backend.reclaim({ grace: 'PT0S' })).reclaimed).to.equal(1);
    expect(await counts()).to.equal(0);
  });
});
