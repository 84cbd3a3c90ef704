/**
 * The Graphile Worker adapter's own behaviour, beyond the shared conformance suite: Graphile's
 * enqueue paths (utils, batch, transactional, task helpers), the jobKey and queue decisions, the
 * trigger and migration checks, retention. Real PostgreSQL and real Graphile runners throughout.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { run, makeWorkerUtils } from 'graphile-worker';
import type pg from 'pg';
import { BackendError, DuplicateJobError, InvalidTransitionError, InvalidUniquePolicyError, JobNotFoundError, type EnqueueResult } from '../../src/index.js';
import {
  addJobWithClient,
  createGraphileWorkerBackend,
  makeUniqueJobsPreset,
  makeUniqueWorkerUtils,
  withUniqueHelpers,
  type UniqueWorkerUtils,
} from '../../adapters/graphile-worker/index.js';
import { createGraphileWorkerSubject, quietLogger, type GraphileWorkerSubject } from '../../examples/demo-backends/graphile-worker.js';
import { isolatePerTest, makePool } from './graphile-worker-fixture.js';

const FILE = fileURLToPath(import.meta.url);

async function rejectionOf(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  expect.fail('expected a rejection');
}

describe('graphile-worker adapter', function () {
  this.timeout(30_000);
  const schemas = isolatePerTest(FILE);
  let pool: pg.Pool;
  let utils: UniqueWorkerUtils | null;
  let subject: GraphileWorkerSubject | null;

  beforeEach(() => {
    pool = makePool(10);
    utils = null;
    subject = null;
  });
  afterEach(async () => {
    await subject?.close();
    await utils?.release();
    await pool.end();
  });

  const makeUtils = async (options: { replaceActive?: boolean } = {}) => {
    const { graphileSchema, uniqueSchema } = schemas.current();
    utils = await makeUniqueWorkerUtils({ pgPool: pool, schema: graphileSchema, uniqueSchema, logger: quietLogger, ...options });
    return utils;
  };
  const makeSubject = async (options: { replaceActive?: boolean } = {}) => {
    subject = await createGraphileWorkerSubject({ ...schemas.current(), ...options });
    return subject;
  };
  const count = async (sql: string, values: unknown[] = []) => {
    const { graphileSchema, uniqueSchema } = schemas.current();
    const text = sql.replaceAll(':gw', `"${graphileSchema}"`).replaceAll(':ou', `"${uniqueSchema}"`);
    const { rows } = await pool.query<{ n: number }>(`select count(*)::int as n from ${text}`, values);
    return rows[0]!.n;
  };

  describe('enqueue through makeUniqueWorkerUtils', () => {
    it('reports created, then deduplicated with the existing id, then replaced with the replaced id; reject throws DuplicateJobError', async () => {
      const u = await makeUtils();
      const policy = { keys: ['type', 'args'] as ('type' | 'args')[] };
      const created = await u.addJob('send_email', { to: 'a@example.com' }, { unique: { ...policy, on_conflict: 'ignore' } });
      expect(created.outcome).to.equal('created');
      const again = await u.addJob('send_email', { to: 'a@example.com' }, { unique: { ...policy, on_conflict: 'ignore' } });
      expect(again).to.deep.include({ outcome: 'deduplicated' });
      expect(again.job.id).to.equal(created.job.id);
      expect(again.job.state).to.equal('available');
      const replaced = await u.addJob('send_email', { to: 'a@example.com' }, { unique: { ...policy, on_conflict: 'replace' } });
      expect(replaced.outcome).to.equal('replaced');
      if (replaced.outcome !== 'replaced') return;
      expect(replaced.replaced.id).to.equal(created.job.id);
      expect(replaced.replaced.state).to.equal('cancelled');
      expect(replaced.replaced.replaced_by).to.equal(replaced.job.id);
      const error = await rejectionOf(u.addJob('send_email', { to: 'a@example.com' }, { unique: policy }));
      expect(error).to.be.instanceOf(DuplicateJobError);
      expect(error).to.include({ existingJobId: replaced.job.id, existingJobState: 'available' });
      expect(await count(':gw._private_jobs')).to.equal(1);
    });

    it('passes a job without unique to Graphile unchanged, so a user jobKey keeps its Graphile replace semantics', async () => {
      const u = await makeUtils();
      const first = await u.addJob('sync', { n: 1 }, { jobKey: 'user-key' });
      const second = await u.addJob('sync', { n: 2 }, { jobKey: 'user-key' });
      // Graphile's own replace: the same row, updated in place, and no ledger record.
      expect(second.id).to.equal(first.id);
      expect(second.revision).to.equal(1);
      expect(await count(':ou.jobs')).to.equal(0);
      expect(await count(':gw._private_jobs where key = $1', ['user-key'])).to.equal(1);
    });

    it('refuses unique together with jobKey before anything is written', async () => {
      const u = await makeUtils();
      const error = await rejectionOf(u.addJob('sync', { n: 1 }, { jobKey: 'k', unique: {} }));
      expect(error).to.be.instanceOf(InvalidUniquePolicyError);
      expect((error as InvalidUniquePolicyError).issues[0]!.path).to.equal('jobKey');
      expect(await count(':gw._private_jobs')).to.equal(0);
    });

    it('keeps the OJS queue in the ledger and never turns it into a Graphile queue_name', async () => {
      const u = await makeUtils();
      const unique = { keys: ['type', 'queue'] as ('type' | 'queue')[] };
      const emails = await u.addJob('notify', {}, { queue: 'emails', unique });
      const sms = await u.addJob('notify', {}, { queue: 'sms', unique });
      expect([emails.outcome, sms.outcome]).to.deep.equal(['created', 'created']);
      expect(emails.job.queue).to.equal('emails');
      expect(await count(':gw.jobs where queue_name is not null')).to.equal(0);
      // Graphile's own queueName still works, independently.
      const serial = await u.addJob('notify', {}, { queue: 'push', queueName: 'serial', unique });
      expect(serial.outcome).to.equal('created');
      expect(await count(':gw.jobs where queue_name = $1', ['serial'])).to.equal(1);
    });

    it('maps runAt, maxAttempts, priority and meta, and takes created_at from the database clock', async () => {
      const u = await makeUtils();
      const { rows: before } = await pool.query<{ now: Date }>('select clock_timestamp() as now');
      const runAt = new Date(Date.now() + 3_600_000);
      const result = await u.addJob('report', { day: 1 }, { runAt, maxAttempts: 4, priority: 5, meta: { tenant: 't1' }, unique: {} });
      const { rows: after } = await pool.query<{ now: Date }>('select clock_timestamp() as now');
      expect(result.job).to.deep.include({ state: 'scheduled', max_attempts: 4, priority: -5, meta: { tenant: 't1' }, args: { day: 1 } });
      expect(result.job.scheduled_at).to.equal(runAt.toISOString());
      const created = Date.parse(result.job.created_at);
      expect(created).to.be.within(before[0]!.now.getTime(), after[0]!.now.getTime());
      expect(await count(':gw.jobs where priority = 5 and max_attempts = 4')).to.equal(1);
    });

    it('sends job data only as parameters: quotes and SQL in args, type and meta are stored verbatim', async () => {
      const u = await makeUtils();
      const hostile = `'); drop table x; --"`;
      const result = await u.addJob(hostile, { v: hostile }, { meta: { m: hostile }, keys: undefined, unique: { keys: ['type', 'args', 'meta'], meta_keys: ['m'] } } as never);
      const read = await u.getUniqueJob(result.job.id);
      expect(read).to.deep.include({ type: hostile, args: { v: hostile }, meta: { m: hostile } });
    });
  });

  describe('job ids', () => {
    it('uses Graphile’s job id as the OJS id by default, takes a chosen id, and refuses a taken or all-digit one', async () => {
      const u = await makeUtils();
      const plain = await u.addJob('t', { n: 1 }, { unique: { keys: ['type', 'args'] } });
      const { rows } = await pool.query(`select id::text from "${schemas.current().graphileSchema}".jobs`);
      expect(plain.job.id).to.equal(rows[0].id);
      const chosen = await u.addJob('t', { n: 2 }, { id: 'order-7-invoice', unique: { keys: ['type', 'args'] } });
      expect(chosen.job.id).to.equal('order-7-invoice');
      expect((await u.getUniqueJob('order-7-invoice'))?.args).to.deep.equal({ n: 2 });
      const taken = await rejectionOf(u.addJob('t', { n: 3 }, { id: 'order-7-invoice', unique: { keys: ['type', 'args'] } }));
      expect(taken).to.be.instanceOf(InvalidUniquePolicyError);
      expect((taken as InvalidUniquePolicyError).issues[0]).to.deep.include({ path: 'id' });
      const digits = await rejectionOf(u.addJob('t', { n: 4 }, { id: '12345', unique: {} }));
      expect((digits as InvalidUniquePolicyError).issues[0]).to.deep.include({ path: 'id' });
      expect(await count(':gw._private_jobs')).to.equal(2);
    });
  });

  describe('addJobs', () => {
    it('adds a batch in one transaction, in which two entries with one key see each other', async () => {
      const u = await makeUtils();
      const unique = { on_conflict: 'ignore' as const };
      const results = await u.addJobs([
        { identifier: 'b', payload: {}, unique },
        { identifier: 'a', payload: {}, unique },
        { identifier: 'b', payload: {}, unique },
      ]);
      expect(results.map((r) => r.outcome)).to.deep.equal(['created', 'created', 'deduplicated']);
      expect(results[2]!.job.id).to.equal(results[0]!.job.id);
      expect(results[1]!.job.type).to.equal('a');
    });

    it('rolls the whole batch back when one entry is a rejected duplicate', async () => {
      const u = await makeUtils();
      await u.addJob('a', {}, { unique: {} });
      const error = await rejectionOf(u.addJobs([{ identifier: 'z', payload: {}, unique: {} }, { identifier: 'a', payload: {}, unique: {} }]));
      expect(error).to.be.instanceOf(DuplicateJobError);
      expect(await count(':gw._private_jobs')).to.equal(1);
      expect(await count(':ou.jobs')).to.equal(1);
    });

    it('passes a batch without unique to Graphile unchanged', async () => {
      const u = await makeUtils();
      const jobs = await u.addJobs([{ identifier: 'x', payload: {} }, { identifier: 'y', payload: {}, jobKey: 'k' }]);
      expect(jobs.map((job) => job.task_identifier)).to.deep.equal(['x', 'y']);
      expect(await count(':ou.jobs')).to.equal(0);
    });
  });

  describe('addJobWithClient (the caller’s transaction)', () => {
    it('commits the job and its ledger record with the caller’s own rows', async () => {
      const u = await makeUtils();
      const { graphileSchema, uniqueSchema } = schemas.current();
      const client = await pool.connect();
      let result: EnqueueResult;
      try {
        await client.query('begin');
        result = await addJobWithClient(client, 'invoice', { order: 7 }, { unique: {} }, { schema: uniqueSchema, graphileSchema });
        // Not visible outside the transaction yet.
        expect(await count(':ou.jobs')).to.equal(0);
        await client.query('commit');
      } finally {
        client.release();
      }
      expect(result.outcome).to.equal('created');
      expect((await u.getUniqueJob(result.job.id))?.state).to.equal('available');
      expect(await count(':gw._private_jobs')).to.equal(1);
    });

    it('leaves neither job nor ledger record when the caller rolls back', async () => {
      await makeUtils();
      const { graphileSchema, uniqueSchema } = schemas.current();
      const client = await pool.connect();
      try {
        await client.query('begin');
        const result = await addJobWithClient(client, 'invoice', { order: 7 }, { unique: {} }, { schema: uniqueSchema, graphileSchema });
        expect(result.outcome).to.equal('created');
        await client.query('rollback');
      } finally {
        client.release();
      }
      expect(await count(':gw._private_jobs')).to.equal(0);
      expect(await count(':ou.jobs')).to.equal(0);
      expect(await count(':ou.heads')).to.equal(0);
    });
  });

  describe('addJobWithClient under REPEATABLE READ', () => {
    it('fails with a retryable BackendError (40001), never a second job, when a concurrent enqueue of the key committed after the snapshot', async () => {
      await makeUtils();
      const { graphileSchema, uniqueSchema } = schemas.current();
      const options = { schema: uniqueSchema, graphileSchema };
      const late = await pool.connect();
      const early = await pool.connect();
      try {
        await late.query('begin isolation level repeatable read');
        await late.query('select 1'); // the snapshot is taken here
        await early.query('begin');
        await addJobWithClient(early, 'invoice', { order: 1 }, { unique: {} }, options);
        await early.query('commit');
        const error = await rejectionOf(addJobWithClient(late, 'invoice', { order: 1 }, { unique: {} }, options));
        expect(error).to.be.instanceOf(BackendError);
        expect(error.message).to.match(/40001/).and.match(/retry the transaction/);
        await late.query('rollback');
      } finally {
        early.release();
        late.release();
      }
      expect(await count(':gw._private_jobs')).to.equal(1);
    });
  });

  describe('lifecycle with a real runner', () => {
    it('records completion through the AFTER DELETE trigger, so a policy that checks completed still sees the job', async () => {
      const s = await makeSubject();
      const unique = { states: ['completed' as const], on_conflict: 'reject' as const };
      const { job } = await s.backend.enqueue({ type: 'once', args: {}, unique });
      const attempt = await s.start(job.id);
      expect((await attempt.complete()).state).to.equal('completed');
      const error = await rejectionOf(s.backend.enqueue({ type: 'once', args: {}, unique }));
      expect(error).to.include({ existingJobId: job.id, existingJobState: 'completed' });
    });

    it('reports retryable after a failed attempt and discarded when attempts are exhausted', async () => {
      const s = await makeSubject();
      const { job } = await s.backend.enqueue({ type: 'flaky', args: {}, max_attempts: 2, unique: {} });
      expect((await (await s.start(job.id)).fail()).state).to.equal('retryable');
      await s.makeDue(job.id);
      const discarded = await (await s.start(job.id)).fail();
      expect(discarded).to.deep.include({ state: 'discarded', attempt: 2 });
      // A discarded job no longer blocks the default states.
      expect((await s.backend.enqueue({ type: 'flaky', args: {}, unique: {} })).outcome).to.equal('created');
    });

    it('rejects replace of a running job with state active by default, and fences it with replaceActive', async () => {
      const s = await makeSubject();
      const unique = { on_conflict: 'replace' as const };
      const { job } = await s.backend.enqueue({ type: 'long', args: {}, unique });
      const attempt = await s.start(job.id);
      const error = await rejectionOf(s.backend.enqueue({ type: 'long', args: {}, unique }));
      expect(error).to.be.instanceOf(DuplicateJobError);
      expect(error).to.include({ existingJobState: 'active', reason: 'active_not_replaceable' });
      expect(s.backend.capabilities.unique_jobs.replace_active).to.equal(false);

      const fencing = createGraphileWorkerBackend({ pgPool: s.pool, ...schemasOf(s), replaceActive: true });
      try {
        const replaced = await fencing.enqueue({ type: 'long', args: {}, unique });
        expect(replaced.outcome).to.equal('replaced');
        if (replaced.outcome !== 'replaced') return;
        expect(replaced.replaced).to.deep.include({ id: job.id, state: 'cancelled' });
        // The running attempt finishes, but its success does not overwrite the cancellation.
        expect((await attempt.complete()).state).to.equal('cancelled');
        expect((await s.backend.getJob(replaced.job.id))?.state).to.equal('available');
      } finally {
        await fencing.close();
      }
    });

    it('cancels a waiting job, fences a running one, and refuses a finished or unknown one (OJS CANCEL)', async () => {
      const s = await makeSubject();
      const waiting = (await s.backend.enqueue({ type: 'c', args: { n: 1 } })).job;
      expect((await s.backend.cancel(waiting.id)).state).to.equal('cancelled');
      const running = (await s.backend.enqueue({ type: 'c', args: { n: 2 } })).job;
      const attempt = await s.start(running.id);
      expect((await s.backend.cancel(running.id)).state).to.equal('cancelled');
      expect((await attempt.complete()).state, 'its success does not undo the cancel').to.equal('cancelled');
      const done = (await s.backend.enqueue({ type: 'c', args: { n: 3 } })).job;
      await (await s.start(done.id)).complete();
      expect(await rejectionOf(s.backend.cancel(done.id))).to.be.instanceOf(InvalidTransitionError).and.include({ from: 'completed' });
      expect(await rejectionOf(s.backend.cancel('no-such-job'))).to.be.instanceOf(JobNotFoundError);
    });

    it('lets helpers.addJob inside a task enqueue unique follow-up jobs (withUniqueHelpers)', async () => {
      const u = await makeUtils();
      const { graphileSchema, uniqueSchema } = schemas.current();
      const outcomes: string[] = [];
      await u.addJob('parent', { n: 1 });
      await u.addJob('parent', { n: 2 });
      const taskList = withUniqueHelpers(
        {
          parent: async (_payload, helpers) => {
            const result = await helpers.addJob('child', { user: 42 }, { unique: { keys: ['type', 'args'], on_conflict: 'ignore' } });
            outcomes.push(result.outcome);
          },
        },
        { schema: uniqueSchema, graphileSchema },
      );
      const { runOnce } = await import('graphile-worker');
      await runOnce({ pgPool: pool, schema: graphileSchema, taskList, logger: quietLogger, preset: { extends: [makeUniqueJobsPreset({ schema: uniqueSchema })] } });
      expect(outcomes.sort()).to.deep.equal(['created', 'deduplicated']);
      expect(await count(':gw.jobs where task_identifier = $1', ['child'])).to.equal(1);
    });
  });

  describe('schema and trigger checks', () => {
    it('reinstalls a dropped trigger from the preset’s postmigrate hook', async () => {
      await makeUtils();
      const { graphileSchema, uniqueSchema } = schemas.current();
      const trigger = `ojs_unique_job_deleted_${uniqueSchema}`;
      const triggers = () => count(`pg_trigger where tgname = $1`, [trigger]);
      expect(await triggers()).to.equal(1);
      await pool.query(`drop trigger "${trigger}" on "${graphileSchema}"._private_jobs`);
      expect(await triggers()).to.equal(0);
      const again = await makeWorkerUtils({ pgPool: pool, schema: graphileSchema, logger: quietLogger, preset: { extends: [makeUniqueJobsPreset({ schema: uniqueSchema })] } });
      await again.release();
      expect(await triggers()).to.equal(1);
    });

    it('upgrades an install whose insert_job still returns a table, and runs add_job outside the generic-plan clause', async () => {
      await (await makeUtils()).release();
      const { uniqueSchema } = schemas.current();
      const returnType = async () =>
        (await pool.query<{ t: string }>(`select prorettype::regtype::text as t from pg_proc where pronamespace = $1::regnamespace and proname = 'insert_job'`, [uniqueSchema])).rows[0]?.t;
      // The previous version's signature and return type (a body is enough to stand for it).
      await pool.query(`drop function "${uniqueSchema}".insert_job(text, json, text, timestamptz, int, int, text[], text, text, text, jsonb, jsonb, interval, int)`);
      await pool.query(`create function "${uniqueSchema}".insert_job(p_identifier text, p_payload json, p_queue_name text, p_run_at timestamptz,
        p_max_attempts int, p_priority int, p_flags text[], p_ojs_id text, p_fingerprint text, p_queue text, p_meta jsonb, p_policy jsonb,
        p_period interval, p_ojs_priority int) returns table (job_id text, id text, created_at timestamptz, scheduled_at timestamptz, max_attempts int)
        language sql as 'select null::text, null::text, null::timestamptz, null::timestamptz, null::int'`);
      expect(await returnType()).to.equal('record');
      const again = await makeUtils();
      expect(await returnType()).to.equal('json');
      expect((await again.addJob('after_upgrade', {}, { unique: {} })).outcome).to.equal('created');
      // Graphile's add_job must plan as in plain addJob: no function on its call path may carry
      // the plan_cache_mode clause (it would reach add_jobs), every other enqueue function does.
      const { rows } = await pool.query<{ proname: string; generic: boolean }>(
        `select proname, coalesce('plan_cache_mode=force_generic_plan' = any(proconfig), false) as generic
         from pg_proc where pronamespace = $1::regnamespace`,
        [uniqueSchema],
      );
      const generic = Object.fromEntries(rows.map((row) => [row.proname, row.generic]));
      for (const name of ['try_enqueue', 'insert_job', 'replace_jobs']) expect(generic[name], name).to.equal(false);
      for (const name of ['candidates', 'lock_key', 'lock_and_read', 'record_job', 'cancel_jobs']) expect(generic[name], name).to.equal(true);
    });

    it('never lets the trigger fail Graphile’s delete: a failing ledger update becomes a warning', async () => {
      const u = await makeUtils();
      const { graphileSchema, uniqueSchema } = schemas.current();
      const result = await u.addJob('doomed', {}, { unique: {} });
      // Any update that labels the row now fails (NOT VALID: existing rows are not checked).
      await pool.query(`alter table "${uniqueSchema}".jobs add constraint refuse_labels check (terminal_state is null) not valid`);
      const client = await pool.connect();
      const notices: string[] = [];
      client.on('notice', (notice) => notices.push(notice.message ?? ''));
      try {
        await client.query(`select * from "${graphileSchema}".complete_jobs(array[$1::bigint])`, [result.job.id]);
      } finally {
        client.release();
      }
      expect(await count(':gw._private_jobs')).to.equal(0);
      expect(notices.join('\n')).to.match(/ojs-unique: could not record the end of job/);
      expect(await count(':ou.jobs where terminal_state is null')).to.equal(1);
    });

    it('refuses a Graphile Worker schema at an untested migration level with a message naming it', async () => {
      await makeUtils();
      const { graphileSchema, uniqueSchema } = schemas.current();
      await pool.query(`insert into "${graphileSchema}".migrations (id, breaking) values (21, false)`);
      const backend = createGraphileWorkerBackend({ pgPool: pool, schema: `${uniqueSchema}_2`, graphileSchema, migrate: false });
      try {
        const error = await rejectionOf(backend.ready());
        expect(error).to.be.instanceOf(BackendError);
        expect(error.message).to.match(/migration 21/).and.match(/0\.18/);
      } finally {
        await backend.close();
        await pool.query(`drop schema if exists "${uniqueSchema}_2" cascade`);
      }
    });

    it('keeps the generated SQL module in step with sql/*.sql (build-sql --check)', () => {
      const output = execFileSync(process.execPath, ['scripts/build-sql.mjs', '--check'], { encoding: 'utf8' });
      expect(output).to.match(/up to date/);
    });
  });

  describe('retention', () => {
    it('reclaims records no policy can still count, and keeps the rest', async () => {
      const s = await makeSubject();
      const plain = (await s.backend.enqueue({ type: 'r', args: { n: 1 }, unique: { keys: ['type', 'args'] } })).job;
      const kept = (await s.backend.enqueue({ type: 'r', args: { n: 2 }, unique: { keys: ['type', 'args'], states: ['cancelled'] } })).job;
      const windowed = (await s.backend.enqueue({ type: 'r', args: { n: 3 }, unique: { keys: ['type', 'args'], states: ['cancelled'], period: 'PT1S' } })).job;
      const live = (await s.backend.enqueue({ type: 'r', args: { n: 4 }, unique: { keys: ['type', 'args'] } })).job;
      for (const job of [plain, kept, windowed]) await s.backend.cancel(job.id);
      await new Promise((resolve) => setTimeout(resolve, 1100));
      const result = await s.backend.reclaim({ grace: 'PT0S' });
      expect(result.reclaimed).to.equal(2);
      expect(await s.backend.getJob(plain.id)).to.equal(null);
      expect(await s.backend.getJob(windowed.id)).to.equal(null);
      expect((await s.backend.getJob(kept.id))?.state).to.equal('cancelled');
      expect((await s.backend.getJob(live.id))?.state).to.equal('available');
    });
  });
});

function schemasOf(s: GraphileWorkerSubject): { schema: string; graphileSchema: string } {
  const names = s.backend.schemas;
  return { schema: names.uniqueSchema, graphileSchema: names.graphileSchema };
}
