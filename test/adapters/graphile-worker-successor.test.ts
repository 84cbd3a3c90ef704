/**
 * `x_successor` on Graphile Worker (docs/design/successor.md), beyond the reference rows
 * (test/expressiveness): each way the holder ends (a worker's completion, a last failed attempt,
 * permanently_fail_jobs, an OJS cancel of the running job, a removal), not on a retry, the id the
 * successor reserves, a replace and a key release dropping it, a completion that rolls back, and
 * reclaim's sweep of a successor stranded by a holder that ended without the triggers.
 */
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import type pg from 'pg';
import { InvalidJobInputError, type EnqueueResult, type UniquePolicyInput } from '../../src/index.js';
import { addJobWithClient, makeUniqueWorkerUtils, type UniqueWorkerUtils } from '../../adapters/graphile-worker/index.js';
import { createGraphileWorkerSubject, quietLogger, type GraphileWorkerSubject } from '../conformance/subjects/graphile-worker.js';
import { isolatePerTest, makePool } from './graphile-worker-fixture.js';
import { rejection } from '../conformance/suite-context.js';

const FILE = fileURLToPath(import.meta.url);
const UNIQUE: UniquePolicyInput = {
  keys: ['type'],
  states: ['available', 'scheduled', 'active', 'retryable'],
  on_conflict: 'ignore',
  x_successor: 'latest',
};

describe('graphile-worker: x_successor', function () {
  this.timeout(30_000);
  const schemas = isolatePerTest(FILE);
  let pool: pg.Pool;
  let subject: GraphileWorkerSubject | null;
  let utils: UniqueWorkerUtils | null;

  beforeEach(() => {
    pool = makePool(6);
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
  const graphileJobs = () => `"${schemas.current().graphileSchema}"._private_jobs`;
  const successors = () => `"${schemas.current().uniqueSchema}".successors`;
  const count = async (table: string): Promise<number> => (await pool.query(`select count(*)::int as n from ${table}`)).rows[0].n;
  /** A successor is kept: the answer names the running holder and the successor's id. */
  const kept = (result: EnqueueResult, holderId: string): string => {
    expect(result.outcome).to.equal('deduplicated');
    expect(result.job).to.deep.include({ id: holderId, state: 'active' });
    const successor = result.outcome === 'deduplicated' ? result.successor : undefined;
    expect(successor, 'a pending successor').to.not.equal(undefined);
    return successor!.id;
  };
  /** The job the key's pending successor became, once the holder's end has committed (Graphile flushes completions after the task returns). */
  const promoted = async (s: GraphileWorkerSubject, id: string) => {
    const deadline = Date.now() + 5_000;
    for (;;) {
      const job = await s.backend.getJob(id);
      if (job || Date.now() > deadline) return job;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };

  it('is declared', async () => {
    const s = await makeSubject();
    expect(s.backend.capabilities.unique_jobs.extensions).to.include('x_successor');
  });

  it('a completion adds the latest successor (its payload and id); an earlier one never becomes a job', async () => {
    const s = await makeSubject();
    const holder = await s.backend.enqueue({ type: 'sync', args: [1], unique: UNIQUE });
    const attempt = await s.start(holder.job.id);
    const first = kept(await s.backend.enqueue({ type: 'sync', args: [2], unique: UNIQUE }), holder.job.id);
    const latest = kept(await s.backend.enqueue({ type: 'sync', args: [3], meta: { n: 3 }, unique: UNIQUE }), holder.job.id);
    expect(latest).to.not.equal(first);
    expect(await count(successors()), 'one per key: the latest replaced the first').to.equal(1);
    expect(await s.backend.getJob(latest), 'not a job while the holder runs').to.equal(null);
    expect(await count(graphileJobs())).to.equal(1);
    expect((await attempt.complete()).state).to.equal('completed');
    const job = await promoted(s, latest);
    expect(job).to.deep.include({ id: latest, type: 'sync', state: 'available', meta: { n: 3 } });
    expect(job!.args).to.deep.equal([3]);
    expect(await s.backend.getJob(first)).to.equal(null);
    expect(await count(successors())).to.equal(0);
    // The promoted job holds the key: a duplicate now meets it (available), no successor.
    const again = await s.backend.enqueue({ type: 'sync', args: [4], unique: UNIQUE });
    expect(again).to.deep.include({ outcome: 'deduplicated' });
    expect(again.job.id).to.equal(latest);
    expect(again.outcome === 'deduplicated' && again.successor).to.equal(undefined);
  });

  it('not on a retry; a failure of the last attempt adds it', async () => {
    const s = await makeSubject();
    const holder = await s.backend.enqueue({ type: 'sync', args: [1], max_attempts: 2, unique: UNIQUE });
    let attempt = await s.start(holder.job.id);
    const id = kept(await s.backend.enqueue({ type: 'sync', args: [2], unique: UNIQUE }), holder.job.id);
    expect((await attempt.fail()).state).to.equal('retryable');
    expect(await s.backend.getJob(id), 'a retry is the same job running again: the successor waits').to.equal(null);
    expect(await count(successors())).to.equal(1);
    await s.makeDue(holder.job.id);
    attempt = await s.start(holder.job.id);
    expect((await attempt.fail()).state).to.equal('discarded');
    expect(await promoted(s, id)).to.deep.include({ id, state: 'available' });
    expect(await count(successors())).to.equal(0);
  });

  it("Graphile's permanentlyFailJobs on a retryable holder adds it", async () => {
    const s = await makeSubject();
    const u = await makeUtils();
    const holder = await s.backend.enqueue({ type: 'sync', args: [1], max_attempts: 3, unique: UNIQUE });
    const attempt = await s.start(holder.job.id);
    const id = kept(await s.backend.enqueue({ type: 'sync', args: [2], unique: UNIQUE }), holder.job.id);
    expect((await attempt.fail()).state).to.equal('retryable');
    await u.permanentlyFailJobs([(await s.backend.graphileJobId(holder.job.id))!], 'given up');
    expect(await s.backend.getJob(holder.job.id)).to.deep.include({ state: 'discarded' });
    expect(await s.backend.getJob(id)).to.deep.include({ id, state: 'available' });
  });

  it('an OJS cancel of the running holder adds it at once', async () => {
    const s = await makeSubject();
    const holder = await s.backend.enqueue({ type: 'sync', args: [1], unique: UNIQUE });
    const attempt = await s.start(holder.job.id);
    const id = kept(await s.backend.enqueue({ type: 'sync', args: [2], unique: UNIQUE }), holder.job.id);
    expect((await s.backend.cancel(holder.job.id)).state).to.equal('cancelled');
    expect(await s.backend.getJob(id)).to.deep.include({ id, state: 'available' });
    expect(await count(successors())).to.equal(0);
    // The fenced attempt still ends (Graphile deletes its row); its end adds nothing more.
    await attempt.complete();
    const deadline = Date.now() + 5_000;
    while ((await count(graphileJobs())) > 1 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await count(graphileJobs()), 'the successor only').to.equal(1);
  });

  it("a removal (Graphile's completeJobs on a retryable holder) adds it", async () => {
    const s = await makeSubject();
    const u = await makeUtils();
    const holder = await s.backend.enqueue({ type: 'sync', args: [1], max_attempts: 3, unique: UNIQUE });
    const attempt = await s.start(holder.job.id);
    const id = kept(await s.backend.enqueue({ type: 'sync', args: [2], unique: UNIQUE }), holder.job.id);
    expect((await attempt.fail()).state).to.equal('retryable');
    await u.completeJobs([(await s.backend.graphileJobId(holder.job.id))!]);
    expect(await s.backend.getJob(holder.job.id)).to.deep.include({ state: 'cancelled' });
    expect(await s.backend.getJob(id)).to.deep.include({ id, state: 'available' });
  });

  it('a completion that rolls back adds nothing; the successor still waits', async () => {
    const s = await makeSubject();
    const holder = await s.backend.enqueue({ type: 'sync', args: [1], unique: UNIQUE });
    const attempt = await s.start(holder.job.id);
    const id = kept(await s.backend.enqueue({ type: 'sync', args: [2], unique: UNIQUE }), holder.job.id);
    const graphileId = await s.backend.graphileJobId(holder.job.id);
    const client = await pool.connect();
    try {
      await client.query('begin');
      await client.query(`delete from ${graphileJobs()} where id = $1`, [graphileId]);
      expect((await client.query(`select count(*)::int as n from ${graphileJobs()}`)).rows[0].n, 'promoted inside the delete').to.equal(1);
      await client.query('rollback');
    } finally {
      client.release();
    }
    expect(await s.backend.getJob(id)).to.equal(null);
    expect(await count(successors())).to.equal(1);
    await attempt.complete();
    expect(await promoted(s, id)).to.deep.include({ id, state: 'available' });
  });

  it("reserves the successor's id: an add naming it is refused like an existing id, on every path", async () => {
    const s = await makeSubject();
    const holder = await s.backend.enqueue({ type: 'sync', args: [1], unique: UNIQUE });
    const attempt = await s.start(holder.job.id);
    const id = kept(await s.backend.enqueue({ type: 'sync', id: 'next-sync', args: [2], unique: UNIQUE }), holder.job.id);
    expect(id, "the add's own id").to.equal('next-sync');
    const refusals = [
      () => s.backend.enqueue({ type: 'other', id, args: [], unique: { keys: ['type'] } }), // an insert
      () => s.backend.enqueue({ type: 'other', id, args: [] }), // a job without a policy
      () => s.backend.enqueue({ type: 'sync', id, args: [3], unique: UNIQUE }), // a duplicate naming it
    ];
    for (const refused of refusals) {
      const error = await rejection(refused());
      expect(error).to.be.instanceOf(InvalidJobInputError);
      expect((error as unknown as InvalidJobInputError).issues[0]!.path).to.equal('id');
    }
    expect(await count(successors())).to.equal(1);
    expect(
      (await pool.query(`select payload from ${successors()}`)).rows[0].payload,
      'the refused duplicate replaced nothing',
    ).to.deep.equal([2]);
    await attempt.complete();
    expect(await promoted(s, id)).to.deep.include({ id, state: 'available' });
  });

  it("an id taken at the same moment by another key's job and by a successor: the second waits for the first's commit, then is refused", async () => {
    const s = await makeSubject();
    const { graphileSchema, uniqueSchema } = schemas.current();
    const options = { uniqueSchema, workerSchema: graphileSchema };
    const holder = await s.backend.enqueue({ type: 'sync', args: [1], unique: UNIQUE });
    const attempt = await s.start(holder.job.id);
    /** Runs `add` while `first` is uncommitted: it must not settle before `first` commits. */
    const second = async (first: (client: pg.PoolClient) => Promise<unknown>, add: () => Promise<unknown>) => {
      const client = await pool.connect();
      try {
        await client.query('begin');
        await first(client);
        let settled = false;
        const racing = add().finally(() => (settled = true));
        // The second add waits on the first's transaction (a unique index entry with the id);
        // without that wait it would settle here, unrefused.
        const firstPid = (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
        const deadline = Date.now() + 5_000;
        for (;;) {
          const waiting = await pool.query(
            `select 1 from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and $1 = any(pg_blocking_pids(pid))`,
            [firstPid],
          );
          if (waiting.rows.length > 0 || settled || Date.now() > deadline) break;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        expect(settled, "the second add waited for the first's commit").to.equal(false);
        await client.query('commit');
        const error = await rejection(racing);
        expect(error).to.be.instanceOf(InvalidJobInputError);
        expect((error as unknown as InvalidJobInputError).issues[0]!.path).to.equal('id');
      } finally {
        await client.query('rollback').catch(() => undefined);
        client.release();
      }
    };
    let completed = false;
    try {
      // A successor takes the id first; another key's insert naming it waits, then is refused.
      await second(
        (client) => addJobWithClient(client, 'sync', [2], { unique: UNIQUE, id: 'raced-1' }, options),
        () => s.backend.enqueue({ type: 'other', id: 'raced-1', args: [], unique: { keys: ['type'] } }),
      );
      expect((await pool.query(`select ojs_id from ${successors()}`)).rows).to.deep.equal([{ ojs_id: 'raced-1' }]);
      // An insert takes the id first; a successor naming it waits, then is refused.
      await second(
        (client) => addJobWithClient(client, 'another', [], { unique: { keys: ['type'] }, id: 'raced-2' }, options),
        () => s.backend.enqueue({ type: 'sync', id: 'raced-2', args: [3], unique: UNIQUE }),
      );
      expect((await pool.query(`select ojs_id from ${successors()}`)).rows, 'the refused add replaced nothing').to.deep.equal([
        { ojs_id: 'raced-1' },
      ]);
      completed = true;
      await attempt.complete();
      expect(await promoted(s, 'raced-1')).to.deep.include({ id: 'raced-1', state: 'available' });
    } finally {
      // A failed assertion must not leave the holder running (the subject's close would wait for it).
      if (!completed) await attempt.complete();
    }
  });

  it('a replace of the key (the holder retryable) drops the pending successor; the end of the replaced holder adds nothing', async () => {
    const s = await makeSubject();
    const replace = { ...UNIQUE, on_conflict: 'replace' } as const;
    const holder = await s.backend.enqueue({ type: 'sync', args: [1], max_attempts: 3, unique: replace });
    const attempt = await s.start(holder.job.id);
    const id = kept(await s.backend.enqueue({ type: 'sync', args: [2], unique: replace }), holder.job.id);
    expect((await attempt.fail()).state).to.equal('retryable');
    const replaced = await s.backend.enqueue({ type: 'sync', args: [3], unique: replace });
    expect(replaced.outcome).to.equal('replaced');
    expect(await count(successors())).to.equal(0);
    expect(await s.backend.getJob(holder.job.id)).to.deep.include({ state: 'cancelled' });
    expect(await s.backend.getJob(id)).to.equal(null);
    expect(await count(graphileJobs()), 'the replacing job only').to.equal(1);
  });

  it('a key release drops the pending successor', async () => {
    const s = await makeSubject();
    const holder = await s.backend.enqueue({ type: 'sync', args: [1], unique: UNIQUE });
    const attempt = await s.start(holder.job.id);
    const id = kept(await s.backend.enqueue({ type: 'sync', args: [2], unique: UNIQUE }), holder.job.id);
    expect(await s.backend.releaseUniqueKey({ type: 'sync', args: [], unique: UNIQUE })).to.equal(1);
    expect(await count(successors())).to.equal(0);
    await attempt.complete();
    expect(await s.backend.getJob(id)).to.equal(null);
    expect(await count(graphileJobs())).to.equal(0);
  });

  it('reclaim adds a successor its holder ended without adding (the holder ended while the triggers were missing)', async () => {
    const s = await makeSubject();
    const { uniqueSchema } = schemas.current();
    const holder = await s.backend.enqueue({ type: 'sync', args: [1], unique: UNIQUE });
    const attempt = await s.start(holder.job.id);
    const id = kept(await s.backend.enqueue({ type: 'sync', args: [2], unique: UNIQUE }), holder.job.id);
    await pool.query(`drop trigger ${JSON.stringify(`ojs_unique_job_deleted_${uniqueSchema}`.slice(0, 63))} on ${graphileJobs()}`);
    await attempt.complete();
    expect(await s.backend.getJob(id), 'stranded').to.equal(null);
    expect(await count(successors())).to.equal(1);
    expect((await s.backend.reclaim()).successors).to.equal(1);
    expect(await s.backend.getJob(id)).to.deep.include({ id, state: 'available' });
    expect((await s.backend.reclaim()).successors, 'once').to.equal(0);
  });

  it('30 concurrent duplicates racing the holder’s completion: one live job of the key at the end, every answer accounted for', async () => {
    const s = await makeSubject();
    const holder = await s.backend.enqueue({ type: 'sync', args: [0], unique: UNIQUE });
    const attempt = await s.start(holder.job.id);
    const adds = Array.from({ length: 30 }, (_, i) => s.backend.enqueue({ type: 'sync', args: [i + 1], unique: UNIQUE }));
    const [results] = await Promise.all([Promise.all(adds), attempt.complete()]);
    const kept = results
      .filter((r) => r.outcome === 'deduplicated' && r.successor)
      .map((r) => (r.outcome === 'deduplicated' ? r.successor!.id : ''));
    const met = results.filter((r) => r.outcome === 'deduplicated' && !r.successor);
    expect(kept.length + met.length, 'every add is a duplicate: of the running holder, or of the job its successor became').to.equal(30);
    // Every answer without a successor met the holder's successor as a job (or, before any was kept, nothing: then it is kept).
    for (const r of met) expect(kept, 'a duplicate without a successor met the promoted one').to.include(r.job.id);
    const deadline = Date.now() + 5_000;
    while ((await count(graphileJobs())) !== 1 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await count(graphileJobs()), 'the promoted successor only').to.equal(1);
    expect(await count(successors())).to.equal(0);
    const { rows } = await pool.query(`select ojs_id from "${schemas.current().uniqueSchema}".jobs where terminal_state is null`);
    expect(rows.map((row) => row.ojs_id)).to.have.length(1);
    expect(kept, 'the promoted job is the last successor kept').to.include(rows[0].ojs_id);
  });

  it('a batch (addJobs) keeps a successor and undoes it with the batch', async () => {
    const s = await makeSubject();
    const u = await makeUtils();
    const holder = await s.backend.enqueue({ type: 'sync', args: [1], unique: UNIQUE });
    const attempt = await s.start(holder.job.id);
    const [result] = await u.addJobs([{ identifier: 'sync', payload: [2], unique: UNIQUE }]);
    const id = kept(result as EnqueueResult, holder.job.id);
    const error = await rejection(
      u.addJobs([
        { identifier: 'sync', payload: [3], unique: UNIQUE },
        { identifier: 'sync', payload: [4], unique: { keys: ['type'], states: ['active'], on_conflict: 'reject' } },
      ]),
    );
    expect(error.name).to.equal('DuplicateJobError');
    expect((await pool.query(`select ojs_id, payload from ${successors()}`)).rows, 'the rolled-back batch replaced nothing').to.deep.equal([
      { ojs_id: id, payload: [2] },
    ]);
    await attempt.complete();
    expect(await promoted(s, id)).to.deep.include({ id, state: 'available' });
  });
});
