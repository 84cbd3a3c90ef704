/**
 * The policy extensions on Graphile Worker, beyond the reference rows (test/expressiveness): what
 * `x_update` writes in Graphile's row and what it leaves alone (a worker's lock, the attempt
 * count), how it meets a worker fetching the job, what `last_duplicate` stores and how reclaim
 * honours the anchors, and that an `x_key` never reaches a column but the stored policy.
 *
 * Windows are moved by shifting the ledger's timestamps back (the database's clock is the one
 * that counts), never by sleeping.
 */
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { runOnce, type Task } from 'graphile-worker';
import type pg from 'pg';
import { isDuplicateJobError, type EnqueueResult } from '../../src/index.js';
import {
  addJobWithClient,
  makeUniqueJobsPreset,
  makeUniqueWorkerUtils,
  type UniqueWorkerUtils,
} from '../../adapters/graphile-worker/index.js';
import { createGraphileWorkerSubject, quietLogger, type GraphileWorkerSubject } from '../conformance/subjects/graphile-worker.js';
import { isolatePerTest, makePool } from './graphile-worker-fixture.js';
import { rejection } from '../conformance/suite-context.js';

const FILE = fileURLToPath(import.meta.url);

describe('graphile-worker: policy extensions', function () {
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

  const makeSubject = async () => {
    subject = await createGraphileWorkerSubject({ ...schemas.current() });
    return subject;
  };
  const makeUtils = async () => {
    const { graphileSchema, uniqueSchema } = schemas.current();
    utils = await makeUniqueWorkerUtils({ pgPool: pool, schema: graphileSchema, uniqueSchema, logger: quietLogger });
    return utils;
  };
  const ledger = () => `"${schemas.current().uniqueSchema}".jobs`;
  const graphileJobs = () => `"${schemas.current().graphileSchema}"._private_jobs`;
  const graphileRow = async (s: GraphileWorkerSubject, id: string) => {
    const jobId = await s.backend.graphileJobId(id);
    const { rows } = await pool.query(`select * from ${graphileJobs()} where id = $1`, [jobId]);
    return rows[0] as {
      payload: unknown;
      run_at: Date;
      attempts: number;
      max_attempts: number;
      priority: number;
      locked_at: Date | null;
      revision: number;
    };
  };
  /** The record's label once the worker's completion (which Graphile flushes after the task returns) has landed. */
  const terminalState = async (id: string): Promise<string | null> => {
    const deadline = Date.now() + 5_000;
    for (;;) {
      const { rows } = await pool.query<{ terminal_state: string | null }>(`select terminal_state from ${ledger()} where ojs_id = $1`, [
        id,
      ]);
      if (rows[0]?.terminal_state || Date.now() > deadline) return rows[0]?.terminal_state ?? null;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  /** Moves a record's created_at (and run_at, finished_at) back by `seconds`: its window ends that much earlier. */
  const age = async (id: string, seconds: number, columns: readonly string[] = ['created_at']) => {
    const set = columns.map((column) => `${column} = ${column} - make_interval(secs => $2)`).join(', ');
    await pool.query(`update ${ledger()} set ${set} where ojs_id = $1`, [id, seconds]);
  };

  it('declares every extension', async () => {
    const s = await makeSubject();
    expect(s.backend.capabilities.unique_jobs.extensions).to.deep.equal([
      'x_period_anchor',
      'x_key',
      'x_update',
      'x_max_wait',
      'x_successor',
    ]);
  });

  describe('x_update', () => {
    it('updates the Graphile row in place: same ids and created_at, payload replaced (never concatenated), only changed fields reported', async () => {
      const s = await makeSubject();
      const unique = { keys: ['type'], x_update: { available: ['args', 'priority', 'scheduled_at'], scheduled: ['args'] } } as const;
      const first = await s.backend.enqueue({ type: 'u', args: [1], priority: 2, unique });
      const before = await graphileRow(s, first.job.id);
      const same = await s.backend.enqueue({ type: 'u', args: [1], priority: 2, scheduled_at: first.job.scheduled_at, unique });
      expect(same).to.deep.include({ outcome: 'updated', changed: [] });
      expect((await graphileRow(s, first.job.id)).revision, 'nothing written when nothing changed').to.equal(before.revision);
      const later = new Date(Date.now() + 3_600_000);
      const moved = await s.backend.enqueue({ type: 'u', args: [2], priority: 5, scheduled_at: later, unique });
      expect(moved).to.deep.include({ outcome: 'updated', changed: ['args', 'priority', 'scheduled_at'] });
      expect(moved.job).to.deep.include({
        id: first.job.id,
        created_at: first.job.created_at,
        state: 'scheduled',
        scheduled_at: later.toISOString(),
        priority: 5,
      });
      expect(moved.job.args).to.deep.equal([2]);
      const row = await graphileRow(s, first.job.id);
      expect(row.payload, "Graphile's array payloads merge on jobKey replace; x_update replaces").to.deep.equal([2]);
      expect(row.priority, 'OJS priority 5 is Graphile priority -5').to.equal(-5);
      expect(row.run_at.toISOString()).to.equal(later.toISOString());
      expect(row.revision).to.equal(before.revision + 1);
      const { rows } = await pool.query(`select count(*)::int as n from ${graphileJobs()}`);
      expect(rows[0].n, 'nothing inserted').to.equal(1);
      expect(await s.backend.getJob(first.job.id)).to.deep.include({ state: 'scheduled', priority: 5 });
    });

    it('on an active job: stored values only, never the worker’s lock or the attempt; the attempt completes', async () => {
      const s = await makeSubject();
      const unique = { keys: ['type'], x_update: { active: ['max_attempts', 'meta', 'args'] } } as const;
      const first = await s.backend.enqueue({ type: 'a', args: { v: 1 }, unique });
      const attempt = await s.start(first.job.id);
      const before = await graphileRow(s, first.job.id);
      const updated = await s.backend.enqueue({ type: 'a', args: { v: 2 }, max_attempts: 9, meta: { why: 'retry more' }, unique });
      expect(updated).to.deep.include({ outcome: 'updated', changed: ['args', 'meta', 'max_attempts'] });
      expect(updated.job).to.deep.include({ id: first.job.id, state: 'active', max_attempts: 9 });
      const row = await graphileRow(s, first.job.id);
      expect(row.locked_at?.toISOString()).to.equal(before.locked_at?.toISOString());
      expect(row.attempts).to.equal(before.attempts);
      expect(row.payload).to.deep.equal({ v: 2 });
      expect((await attempt.complete()).state).to.equal('completed');
    });

    it('on an active job without an `active` entry: on_conflict decides (ignore), nothing is written', async () => {
      const s = await makeSubject();
      const unique = { keys: ['type'], x_update: { available: ['args'] }, on_conflict: 'ignore' } as const;
      const first = await s.backend.enqueue({ type: 'b', args: { v: 1 }, unique });
      const attempt = await s.start(first.job.id);
      const before = await graphileRow(s, first.job.id);
      const result = await s.backend.enqueue({ type: 'b', args: { v: 2 }, unique });
      expect(result).to.deep.include({ outcome: 'deduplicated' });
      expect(await graphileRow(s, first.job.id)).to.deep.equal(before);
      await attempt.complete();
    });

    it('on a retryable job: the new time becomes the retry time, the attempt count stays', async () => {
      const s = await makeSubject();
      const unique = { keys: ['type'], x_update: { retryable: ['args', 'scheduled_at'] } } as const;
      const first = await s.backend.enqueue({ type: 'r', args: { v: 1 }, unique });
      expect((await (await s.start(first.job.id)).fail('planned')).state).to.equal('retryable');
      const later = new Date(Date.now() + 3_600_000);
      const updated = await s.backend.enqueue({ type: 'r', args: { v: 2 }, scheduled_at: later, unique });
      expect(updated).to.deep.include({ outcome: 'updated', changed: ['args', 'scheduled_at'] });
      expect(updated.job).to.deep.include({ state: 'retryable', attempt: 1, scheduled_at: later.toISOString() });
      const row = await graphileRow(s, first.job.id);
      expect(row.attempts).to.equal(1);
      expect(row.run_at.toISOString()).to.equal(later.toISOString());
    });

    it('50 concurrent adds of one key: one created, 49 updated in place, one Graphile row holding one of their payloads', async () => {
      const s = await makeSubject();
      const unique = { keys: ['type'], x_update: { available: ['args'] } } as const;
      const results = await Promise.all(Array.from({ length: 50 }, (_, n) => s.backend.enqueue({ type: 'burst', args: { n }, unique })));
      expect(results.filter((result) => result.outcome === 'created')).to.have.length(1);
      expect(results.filter((result) => result.outcome === 'updated')).to.have.length(49);
      expect(new Set(results.map((result) => result.job.id)).size).to.equal(1);
      const { rows } = await pool.query<{ payload: { n: number } }>(`select payload from ${graphileJobs()}`);
      expect(rows).to.have.length(1);
      expect(rows[0]!.payload.n).to.be.within(0, 49);
    });

    it('meets a worker fetching the job: the worker skips it while the update’s transaction holds it, then runs the updated payload', async () => {
      const u = await makeUtils();
      const { graphileSchema, uniqueSchema } = schemas.current();
      const unique = { keys: ['type'], x_update: { available: ['args'] } } as const;
      const first = (await u.addJob('race', { v: 1 }, { unique })) as EnqueueResult;
      const seen: unknown[] = [];
      const taskList: Record<string, Task> = {
        race: async (payload) => {
          seen.push(payload);
        },
      };
      const preset = { extends: [makeUniqueJobsPreset({ uniqueSchema })] };
      const worker = () => runOnce({ pgPool: pool, schema: graphileSchema, taskList, logger: quietLogger, preset });
      const client = await pool.connect();
      try {
        await client.query('begin');
        const updated = await addJobWithClient(client, 'race', { v: 2 }, { unique }, { uniqueSchema, workerSchema: graphileSchema });
        expect(updated).to.deep.include({ outcome: 'updated', changed: ['args'] });
        // The update holds the job's Graphile row: Graphile's fetch (FOR UPDATE SKIP LOCKED) passes it by.
        await worker();
        expect(seen, 'no worker ran the job while the update was uncommitted').to.deep.equal([]);
        await client.query('commit');
      } catch (error) {
        await client.query('rollback').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
      await worker();
      expect(seen).to.deep.equal([{ v: 2 }]);
      expect(await terminalState(first.job.id)).to.equal('completed');
    });

    it('a worker that fetched first keeps the old payload; the update waits for nothing and changes only stored values', async () => {
      const u = await makeUtils();
      const { graphileSchema, uniqueSchema } = schemas.current();
      const unique = { keys: ['type'], x_update: { available: ['args'], active: ['args'] } } as const;
      await u.addJob('race2', { v: 1 }, { unique });
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      let running!: () => void;
      const started = new Promise<void>((resolve) => (running = resolve));
      const seen: unknown[] = [];
      const taskList: Record<string, Task> = {
        race2: async (payload) => {
          seen.push(payload);
          running();
          await held;
        },
      };
      const preset = { extends: [makeUniqueJobsPreset({ uniqueSchema })] };
      const worker = runOnce({ pgPool: pool, schema: graphileSchema, taskList, logger: quietLogger, preset });
      await started;
      const updated = await u.addJob('race2', { v: 2 }, { unique });
      expect(updated).to.deep.include({ outcome: 'updated', changed: ['args'] });
      expect((updated as EnqueueResult).job.state).to.equal('active');
      release();
      await worker;
      expect(seen).to.deep.equal([{ v: 1 }]);
      expect(await terminalState((updated as EnqueueResult).job.id)).to.equal('completed');
    });
  });

  describe('x_period_anchor', () => {
    it('last_duplicate: a rejected duplicate writes last_duplicate_at, and the window runs from it', async () => {
      const s = await makeSubject();
      const unique = { keys: ['type'], period: 'PT1M', x_period_anchor: 'last_duplicate' } as const;
      const first = await s.backend.enqueue({ type: 'l', args: {}, unique });
      await age(first.job.id, 50);
      const error = await rejection(s.backend.enqueue({ type: 'l', args: {}, unique }));
      expect(isDuplicateJobError(error)).to.equal(true);
      const { rows } = await pool.query(`select last_duplicate_at, created_at, expires_at from ${ledger()} where ojs_id = $1`, [
        first.job.id,
      ]);
      expect(rows[0].last_duplicate_at, 'the reject wrote').to.not.equal(null);
      expect(rows[0].expires_at.getTime() - rows[0].last_duplicate_at.getTime(), 'expires_at moved to the touch + period').to.equal(60_000);
      // 70 s after creation, 20 s after the last attempt: still a duplicate.
      await age(first.job.id, 20, ['created_at']);
      const again = await rejection(s.backend.enqueue({ type: 'l', args: {}, unique }));
      expect(isDuplicateJobError(again) && again.existingJobId).to.equal(first.job.id);
      await age(first.job.id, 61, ['created_at', 'last_duplicate_at']);
      expect((await s.backend.enqueue({ type: 'l', args: {}, unique })).outcome).to.equal('created');
    });

    it('last_duplicate under ignore: the duplicate path writes (locked), the answer is the existing job', async () => {
      const s = await makeSubject();
      const unique = { keys: ['type'], period: 'PT1M', x_period_anchor: 'last_duplicate', on_conflict: 'ignore' } as const;
      const first = await s.backend.enqueue({ type: 'li', args: {}, unique });
      const dup = await s.backend.enqueue({ type: 'li', args: {}, unique });
      expect(dup).to.deep.include({ outcome: 'deduplicated' });
      expect(dup.job.id).to.equal(first.job.id);
      const { rows } = await pool.query(`select last_duplicate_at from ${ledger()} where ojs_id = $1`, [first.job.id]);
      expect(rows[0].last_duplicate_at).to.not.equal(null);
    });

    it('scheduled_at: the window runs from the job’s due time, not its creation', async () => {
      const s = await makeSubject();
      const unique = { keys: ['type'], period: 'PT1M', x_period_anchor: 'scheduled_at', on_conflict: 'ignore' } as const;
      const due = new Date(Date.now() + 3_600_000);
      const first = await s.backend.enqueue({ type: 's', args: {}, scheduled_at: due, unique });
      await age(first.job.id, 600);
      const dup = await s.backend.enqueue({ type: 's', args: {}, unique });
      expect(dup).to.deep.include({ outcome: 'deduplicated' });
      const plain = { keys: ['type'], period: 'PT1M', on_conflict: 'ignore' } as const;
      expect((await s.backend.enqueue({ type: 's', args: {}, unique: plain })).outcome, 'from created_at it has run out').to.equal(
        'created',
      );
    });

    it('reclaim keeps a finished record while its anchored window is open, and reclaims it after', async () => {
      const s = await makeSubject();
      const states = ['available', 'scheduled', 'cancelled'] as const;
      const touched = { keys: ['type'], states, period: 'PT1M', x_period_anchor: 'last_duplicate', on_conflict: 'ignore' } as const;
      const t = (await s.backend.enqueue({ type: 'k1', args: {}, unique: touched })).job;
      await s.backend.cancel(t.id);
      expect((await s.backend.enqueue({ type: 'k1', args: {}, unique: touched })).outcome).to.equal('deduplicated');
      await age(t.id, 120, ['created_at', 'finished_at']);
      const scheduled = { keys: ['type'], states, period: 'PT1M', x_period_anchor: 'scheduled_at' } as const;
      const d = (await s.backend.enqueue({ type: 'k2', args: {}, scheduled_at: new Date(Date.now() + 3_600_000), unique: scheduled })).job;
      await s.backend.cancel(d.id);
      await age(d.id, 120, ['created_at', 'finished_at']);
      expect((await s.backend.reclaim({ grace: 'PT0S' })).reclaimed, 'both windows are open').to.equal(0);
      // The same through the key's remembered retention only (its own policy's expires_at aside).
      await pool.query(`update ${ledger()} set expires_at = created_at where ojs_id = any($1)`, [[t.id, d.id]]);
      expect((await s.backend.reclaim({ grace: 'PT0S' })).reclaimed).to.equal(0);
      await age(t.id, 120, ['last_duplicate_at']);
      await age(d.id, 7_200, ['scheduled_at']);
      expect((await s.backend.reclaim({ grace: 'PT0S' })).reclaimed).to.equal(2);
      expect(await s.backend.getJob(t.id)).to.equal(null);
      expect(await s.backend.getJob(d.id)).to.equal(null);
    });
  });

  describe('x_key', () => {
    it('shares one key across types, and the raw key reaches no column but the stored policy', async () => {
      const s = await makeSubject();
      const raw = 'customer-4711:welcome-mail';
      const first = await s.backend.enqueue({ type: 'mail.a', args: { n: 1 }, unique: { x_key: raw, on_conflict: 'ignore' } });
      const other = await s.backend.enqueue({ type: 'mail.b', args: { n: 2 }, unique: { x_key: raw, on_conflict: 'ignore' } });
      expect(other).to.deep.include({ outcome: 'deduplicated' });
      expect(other.job.id).to.equal(first.job.id);
      expect(first.job.uniqueness_key).to.match(/^[0-9a-f]{64}$/);
      const { uniqueSchema, graphileSchema } = schemas.current();
      const { rows } = await pool.query<{ at: string }>(
        `select 'ledger' as at from "${uniqueSchema}".jobs l where (to_jsonb(l) - 'policy')::text like '%' || $1 || '%'
         union all select 'ledger policy' from "${uniqueSchema}".jobs l where l.policy ->> 'x_key' = $1
         union all select 'heads' from "${uniqueSchema}".heads h where to_jsonb(h)::text like '%' || $1 || '%'
         union all select 'graphile' from "${graphileSchema}"._private_jobs j where to_jsonb(j)::text like '%' || $1 || '%'
         union all select 'settings' from "${uniqueSchema}".settings x where to_jsonb(x)::text like '%' || $1 || '%'`,
        [raw],
      );
      expect(rows.map((row) => row.at)).to.deep.equal(['ledger policy']);
    });
  });
});
