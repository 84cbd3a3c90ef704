/**
 * The Graphile Worker adapter's own behaviour, beyond the shared conformance suite: Graphile's
 * enqueue paths (utils, batch, transactional, task helpers), the jobKey and queue decisions, the
 * trigger, retention. Real PostgreSQL and real Graphile runners throughout.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { run, makeWorkerUtils } from 'graphile-worker';
import type pg from 'pg';
import {
  BackendError,
  DuplicateJobError,
  InvalidTransitionError,
  InvalidJobInputError,
  JobNotFoundError,
  type EnqueueResult,
} from '../../src/index.js';
import {
  addJobWithClient,
  createGraphileWorkerBackend,
  makeUniqueJobsPreset,
  makeUniqueWorkerUtils,
  withUniqueHelpers,
  type UniqueWorkerUtils,
} from '../../adapters/graphile-worker/index.js';
import { createGraphileWorkerSubject, quietLogger, type GraphileWorkerSubject } from '../conformance/subjects/graphile-worker.js';
import { sqlFiles, type SqlFileName } from '../../adapters/graphile-worker/generated/sql.js';
import { GraphileWorkerSql } from '../../adapters/graphile-worker/graphile-worker-sql.js';
import { isolatePerTest, makePool } from './graphile-worker-fixture.js';
import { rejection } from '../conformance/suite-context.js';

const FILE = fileURLToPath(import.meta.url);
const rejectionOf = (promise: Promise<unknown>): Promise<Error> => rejection(promise);

describe('graphile-worker adapter', function () {
  this.timeout(30_000);
  const schemas = isolatePerTest(FILE);
  let pool: pg.Pool;
  let utils: UniqueWorkerUtils | null;
  let subject: GraphileWorkerSubject | null;

  beforeEach(() => {
    pool = makePool(4);
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
      const policy = { keys: ['type', 'args'] as ('type' | 'args')[] } as const;
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
      expect(error).to.be.instanceOf(InvalidJobInputError);
      expect((error as InvalidJobInputError).issues[0]!.path).to.equal('spec.jobKey');
      expect(await count(':gw._private_jobs')).to.equal(0);
    });

    it('keeps the OJS queue in the ledger and never turns it into a Graphile queue_name', async () => {
      const u = await makeUtils();
      const unique = { keys: ['type', 'queue'] as ('type' | 'queue')[] } as const;
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
      const result = await u.addJob(hostile, { v: hostile }, {
        meta: { m: hostile },
        keys: undefined,
        unique: { keys: ['type', 'args', 'meta'], meta_keys: ['m'] },
      } as never);
      const read = await u.getUniqueJob(result.job.id);
      expect(read).to.deep.include({ type: hostile, args: { v: hostile }, meta: { m: hostile } });
    });
  });

  describe('payload as given (§4.2: NFC is for the key only)', () => {
    const nfd = 'Cafe\u0301.txt'; // 9 UTF-16 units; its NFC form 'Café.txt' has 8
    const payload = { path: nfd, ['cle\u0301']: 1 };
    const storedPaths = async () => {
      const { rows } = await pool.query<{ path: string }>(
        `select payload->>'path' as path from "${schemas.current().graphileSchema}"._private_jobs order by id`,
      );
      return rows.map((row) => row.path);
    };

    it('utils.addJob, addJobs and addJobWithClient store the payload unnormalised, and still deduplicate its NFC form', async () => {
      const u = await makeUtils();
      const { graphileSchema, uniqueSchema } = schemas.current();
      const unique = { keys: ['type', 'args'] as ('type' | 'args')[], on_conflict: 'ignore' as const };
      const created = await u.addJob('index', payload, { meta: { label: nfd }, unique });
      expect(created.job.args).to.deep.equal(payload);
      expect(created.job.meta).to.deep.equal({ label: nfd });
      expect(await u.getUniqueJob(created.job.id)).to.deep.include({ args: payload, meta: { label: nfd } });
      // The NFC spelling is the same key.
      const nfc = await u.addJob('index', { path: nfd.normalize('NFC'), ['clé']: 1 }, { unique });
      expect(nfc).to.deep.include({ outcome: 'deduplicated' });
      const batch = await u.addJobs([{ identifier: 'index-batch', payload, unique }]);
      expect(batch[0]!.job.args).to.deep.equal(payload);
      const client = await pool.connect();
      try {
        await client.query('begin');
        await addJobWithClient(client, 'index-tx', payload, { unique }, { uniqueSchema, workerSchema: graphileSchema });
        await client.query('commit');
      } finally {
        client.release();
      }
      expect(await storedPaths()).to.deep.equal([nfd, nfd, nfd]);
    });

    it('a task receives exactly the payload its parent enqueued through helpers.addJob with unique', async () => {
      const u = await makeUtils();
      const { graphileSchema, uniqueSchema } = schemas.current();
      await u.addJob('parent', {});
      const received: unknown[] = [];
      const taskList = withUniqueHelpers(
        {
          parent: async (_payload, helpers) => {
            await helpers.addJob('child', payload, { unique: { keys: ['type', 'args'] } });
          },
          child: async (childPayload) => {
            received.push(childPayload);
          },
        },
        { uniqueSchema, workerSchema: graphileSchema },
      );
      const { runOnce } = await import('graphile-worker');
      const preset = { extends: [makeUniqueJobsPreset({ uniqueSchema })] };
      await runOnce({ pgPool: pool, schema: graphileSchema, taskList, logger: quietLogger, preset });
      await runOnce({ pgPool: pool, schema: graphileSchema, taskList, logger: quietLogger, preset });
      expect(received).to.deep.equal([payload]);
      expect((received[0] as { path: string }).path).to.have.length(9);
    });
  });

  describe('several duplicates sharing one created_at (insertion order)', () => {
    it('names the first inserted (Graphile job id) as the existing job, whatever the OJS ids, and replace cancels in that order', async () => {
      const u = await makeUtils();
      const { graphileSchema, uniqueSchema } = schemas.current();
      // Narrow policies let two jobs of one key coexist: one available, one scheduled. Both are
      // added in one caller transaction; ids chosen so that text order is the reverse of
      // insertion order.
      const narrow = { keys: ['type'] as 'type'[], states: ['scheduled' as const] };
      const client = await pool.connect();
      try {
        await client.query('begin');
        await addJobWithClient(client, 'sync', { n: 1 }, { id: 'z-first', unique: narrow }, { uniqueSchema, workerSchema: graphileSchema });
        await addJobWithClient(
          client,
          'sync',
          { n: 2 },
          { id: 'a-second', runAt: new Date(Date.now() + 3_600_000), unique: narrow },
          { uniqueSchema, workerSchema: graphileSchema },
        );
        // created_at is the database clock in µs, compared in ms: two inserts of one key in the
        // same millisecond are routine under load. Made certain here rather than hoped for.
        await client.query(`update "${uniqueSchema}".jobs set created_at = (select min(created_at) from "${uniqueSchema}".jobs)`);
        await client.query('commit');
      } finally {
        client.release();
      }
      const error = await rejectionOf(u.addJob('sync', { n: 3 }, { unique: { keys: ['type'] } }));
      expect(error).to.include({ existingJobId: 'z-first', existingJobState: 'available' });
      const ignored = await u.addJob('sync', { n: 3 }, { unique: { keys: ['type'], on_conflict: 'ignore' } });
      expect(ignored.job.id).to.equal('z-first');
      const replaced = await u.addJob('sync', { n: 3 }, { unique: { keys: ['type'], on_conflict: 'replace' } });
      if (replaced.outcome !== 'replaced') expect.fail(`expected replaced, got ${replaced.outcome}`);
      expect(replaced.replaced.id).to.equal('z-first');
      expect((replaced.also_replaced ?? []).map((job) => job.id)).to.deep.equal(['a-second']);
    });
  });

  describe('start-up failures and typed errors', () => {
    /** `pool`, whose connect and query fail (as an unreachable database does) while `down()` says so. */
    const flakyPool = (down: () => boolean): pg.Pool =>
      new Proxy(pool, {
        get(target, property, receiver) {
          const value = Reflect.get(target, property, receiver);
          if ((property === 'connect' || property === 'query') && typeof value === 'function') {
            return (...args: unknown[]) =>
              down()
                ? Promise.reject(Object.assign(new Error('connect ECONNREFUSED (simulated)'), { code: 'ECONNREFUSED' }))
                : value.apply(target, args);
          }
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });

    for (const migrate of [true, false]) {
      it(`retries the start-up after a failed one (migrate: ${migrate}), and the failure is a BackendError`, async () => {
        const { graphileSchema, uniqueSchema } = schemas.current();
        if (!migrate) {
          // Graphile's schema must exist already; the adapter's is installed by the backend.
          await (await makeUtils()).release();
          utils = null;
        }
        let down = true;
        const backend = createGraphileWorkerBackend({ pgPool: flakyPool(() => down), uniqueSchema, workerSchema: graphileSchema, migrate });
        try {
          const failed = await rejectionOf(backend.enqueue({ type: 't', args: {} }));
          expect(failed).to.be.instanceOf(BackendError);
          expect(failed.message).to.match(/ECONNREFUSED/);
          down = false;
          expect((await backend.enqueue({ type: 't', args: {}, unique: {} })).outcome).to.equal('created');
        } finally {
          await backend.close();
        }
      });
    }

    it('turns an unreachable database into BackendError on every path (start-up, connect, query)', async () => {
      const unreachable = createGraphileWorkerBackend({ connectionString: 'postgres://127.0.0.1:1/test' });
      try {
        for (const operation of [
          () => unreachable.enqueue({ type: 't', args: {} }),
          () => unreachable.getJob('x'),
          () => unreachable.ready(),
        ]) {
          expect(await rejectionOf(operation())).to.be.instanceOf(BackendError);
        }
      } finally {
        await unreachable.close();
      }
      // Installed, then its pool goes away: pool.connect() and pool.query() fail.
      const { graphileSchema, uniqueSchema } = schemas.current();
      const own = makePool(2);
      const backend = createGraphileWorkerBackend({ pgPool: own, uniqueSchema, workerSchema: graphileSchema });
      try {
        const { job } = await backend.enqueue({ type: 't', args: {}, unique: {} });
        await own.end();
        for (const operation of [
          () => backend.enqueue({ type: 't', args: {}, unique: {} }),
          () => backend.cancel(job.id),
          () => backend.getJob(job.id),
          () => backend.graphileJobId(job.id),
          () => backend.reclaim(),
        ]) {
          expect(await rejectionOf(operation())).to.be.instanceOf(BackendError);
        }
      } finally {
        await backend.close();
      }
    });

    it('makeUniqueWorkerUtils: a connection Graphile cannot get is a BackendError too', async () => {
      const { graphileSchema, uniqueSchema } = schemas.current();
      const own = makePool(2);
      const u = await makeUniqueWorkerUtils({ pgPool: own, schema: graphileSchema, uniqueSchema, logger: quietLogger });
      try {
        await own.end();
        for (const operation of [
          () => u.addJob('t', {}, { unique: {} }),
          () => u.addJobs([{ identifier: 't', payload: {}, unique: {} }]),
          () => u.getUniqueJob('1'),
          () => u.reclaim(),
        ]) {
          expect(await rejectionOf(operation())).to.be.instanceOf(BackendError);
        }
      } finally {
        await u.release();
      }
    });

    it('throws BackendError (written: false) from every method once closed', async () => {
      const { graphileSchema, uniqueSchema } = schemas.current();
      const backend = createGraphileWorkerBackend({ pgPool: pool, uniqueSchema, workerSchema: graphileSchema });
      await backend.ready();
      await backend.close();
      for (const operation of [
        () => backend.enqueue({ type: 't', args: {} }),
        () => backend.getJob('1'),
        () => backend.cancel('1'),
        () => backend.reclaim(),
      ]) {
        const error = await rejectionOf(operation());
        expect(error).to.be.instanceOf(BackendError).and.include({ written: false });
        expect(error.message).to.match(/closed/);
      }
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
      expect(taken).to.be.instanceOf(InvalidJobInputError);
      expect((taken as InvalidJobInputError).issues[0]).to.deep.include({ path: 'id' });
      const digits = await rejectionOf(u.addJob('t', { n: 4 }, { id: '12345', unique: {} }));
      expect((digits as InvalidJobInputError).issues[0]).to.deep.include({ path: 'id' });
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
      const error = await rejectionOf(
        u.addJobs([
          { identifier: 'z', payload: {}, unique: {} },
          { identifier: 'a', payload: {}, unique: {} },
        ]),
      );
      expect(error).to.be.instanceOf(DuplicateJobError);
      expect(await count(':gw._private_jobs')).to.equal(1);
      expect(await count(':ou.jobs')).to.equal(1);
    });

    it('passes a batch without unique to Graphile unchanged', async () => {
      const u = await makeUtils();
      const jobs = await u.addJobs([
        { identifier: 'x', payload: {} },
        { identifier: 'y', payload: {}, jobKey: 'k' },
      ]);
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
        result = await addJobWithClient(client, 'invoice', { order: 7 }, { unique: {} }, { uniqueSchema, workerSchema: graphileSchema });
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
        const result = await addJobWithClient(
          client,
          'invoice',
          { order: 7 },
          { unique: {} },
          { uniqueSchema, workerSchema: graphileSchema },
        );
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
      const options = { uniqueSchema, workerSchema: graphileSchema };
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
        expect(error.message)
          .to.match(/40001/)
          .and.match(/retry the transaction/);
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

    it('the test subject stops waiting for a state after its deadline, with a message naming the job and the states', async () => {
      const s = await makeSubject();
      const { job } = await s.backend.enqueue({ type: 'never-run', args: {}, unique: {} });
      const started = Date.now();
      const error = await rejectionOf(s.settled(job.id, ['completed'], 200));
      expect(Date.now() - started).to.be.below(5_000);
      expect(error.message).to.equal(`graphile-worker subject: job ${job.id} did not reach completed within 200 ms (last seen: available)`);
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
      expect(await rejectionOf(s.backend.cancel(done.id)))
        .to.be.instanceOf(InvalidTransitionError)
        .and.include({ from: 'completed' });
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
        { uniqueSchema, workerSchema: graphileSchema },
      );
      const { runOnce } = await import('graphile-worker');
      await runOnce({
        pgPool: pool,
        schema: graphileSchema,
        taskList,
        logger: quietLogger,
        preset: { extends: [makeUniqueJobsPreset({ uniqueSchema })] },
      });
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
      const again = await makeWorkerUtils({
        pgPool: pool,
        schema: graphileSchema,
        logger: quietLogger,
        preset: { extends: [makeUniqueJobsPreset({ uniqueSchema })] },
      });
      await again.release();
      expect(await triggers()).to.equal(1);
    });

    it('runs add_job outside the generic-plan clause, and every other enqueue function under it', async () => {
      await makeUtils();
      const { uniqueSchema } = schemas.current();
      // Graphile's add_job must plan as in plain addJob: no function on its call path may carry
      // the plan_cache_mode clause (it would reach add_jobs), every other enqueue function does.
      const { rows } = await pool.query<{ proname: string; generic: boolean }>(
        `select proname, coalesce('plan_cache_mode=force_generic_plan' = any(proconfig), false) as generic
         from pg_proc where pronamespace = $1::regnamespace`,
        [uniqueSchema],
      );
      const generic = Object.fromEntries(rows.map((row) => [row.proname, row.generic]));
      for (const name of ['try_enqueue', 'insert_job', 'insert_head_job', 'replace_jobs']) expect(generic[name], name).to.equal(false);
      for (const name of ['candidates', 'lock_key', 'lock_and_read', 'record_job', 'cancel_jobs'])
        expect(generic[name], name).to.equal(true);
    });

    it('the lost-reply check waits for a key’s first record still being inserted (its head, invisible until commit)', async () => {
      const { graphileSchema, uniqueSchema } = schemas.current();
      await makeUtils();
      const writer = await pool.connect();
      const checker = await pool.connect();
      try {
        await writer.query('begin');
        const added = (await addJobWithClient(
          writer,
          'in_flight',
          {},
          { unique: {} },
          { uniqueSchema, workerSchema: graphileSchema },
        )) as EnqueueResult;
        const key = added.job.uniqueness_key!;
        // lock-key as the recovery runs it: in a transaction it rolls back, under a lock timeout.
        const lockKey = async () => {
          await checker.query('begin');
          try {
            await checker.query('set local lock_timeout = 300');
            await checker.query(new GraphileWorkerSql({ workerSchema: graphileSchema, uniqueSchema }).text('lock-key'), [key]);
          } finally {
            await checker.query('rollback');
          }
        };
        expect(await rejectionOf(lockKey())).to.include({ code: '55P03' });
        await writer.query('rollback');
        // Nothing in flight any more: it returns at once, and its placeholder is gone with its rollback.
        await lockKey();
        expect(await count(':ou.jobs')).to.equal(0);
      } finally {
        await writer.query('rollback').catch(() => undefined);
        writer.release();
        checker.release();
      }
    });

    it('retries its own transaction after a serialisation failure or deadlock; addJobWithClient leaves the retry to the caller', async () => {
      const u = await makeUtils();
      const { graphileSchema, uniqueSchema } = schemas.current();
      // The first ledger insert of a job whose type starts with `fail_once` fails as PostgreSQL
      // fails a transaction it rolls back (a sequence: its nextval survives the rollback).
      await pool.query(`create sequence "${uniqueSchema}".fail_once;
        create function "${uniqueSchema}".fail_once() returns trigger language plpgsql as $$
        begin
          if new.type like 'fail_once%' and nextval('"${uniqueSchema}".fail_once') % 2 = 1 then
            raise exception using errcode = case when new.type like '%deadlock' then '40P01' else '40001' end;
          end if;
          return new;
        end $$;
        create trigger fail_once before insert on "${uniqueSchema}".jobs for each row execute function "${uniqueSchema}".fail_once()`);
      const attempts = async () =>
        Number((await pool.query<{ n: string }>(`select last_value as n from "${uniqueSchema}".fail_once`)).rows[0]!.n);
      // Pool-based addJob: the new key's one-statement insert, then an insert beside a finished
      // record (the locked path, in the adapter's transaction), then addJobs.
      expect((await u.addJob('fail_once', {}, { unique: {} })).outcome).to.equal('created');
      expect(await attempts()).to.equal(2);
      const first = await u.addJob('fail_once_deadlock', {}, { unique: { keys: ['type'] } });
      expect(await attempts()).to.equal(4);
      // Removed before it ran: its record reads cancelled, which the next policy counts.
      await pool.query(`select "${graphileSchema}".complete_jobs(array(select job_id from "${uniqueSchema}".jobs where ojs_id = $1))`, [
        first.job.id,
      ]);
      const beside = await u.addJob(
        'fail_once_deadlock',
        {},
        { unique: { keys: ['type'], states: ['cancelled'], on_conflict: 'replace' } },
      );
      expect(beside).to.include({ outcome: 'replaced' });
      expect(await attempts()).to.equal(6);
      const batch = await u.addJobs([{ identifier: 'fail_once_batch', payload: {}, unique: {} }]);
      expect(batch.map((r) => r.outcome)).to.deep.equal(['created']);
      expect(await attempts()).to.equal(8);
      expect(await count(':ou.jobs where type like $1', ['fail_once%'])).to.equal(4);
      // The caller's transaction: the typed error, nothing written, the transaction still usable.
      const client = await pool.connect();
      try {
        await client.query('begin');
        const error = await rejectionOf(
          addJobWithClient(client, 'fail_once_mine', {}, { unique: {} }, { uniqueSchema, workerSchema: graphileSchema }),
        );
        expect(error).to.be.instanceOf(BackendError).and.to.include({ written: false });
        expect(error.message).to.match(/retry the transaction/);
        await client.query('commit');
      } finally {
        client.release();
      }
      expect(await count(':ou.jobs where type = $1', ['fail_once_mine'])).to.equal(0);
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

    it('refuses a schema name with "$" (or empty, or over 63 bytes) with an invalid_request naming the option', async () => {
      const issuesOf = (error: unknown) => (error as InvalidJobInputError).issues.map((issue) => issue.path);
      const refused = (body: () => unknown) => {
        try {
          body();
        } catch (error) {
          expect(error).to.be.instanceOf(InvalidJobInputError);
          return issuesOf(error);
        }
        return expect.fail('expected a refusal');
      };
      // The reviewer's name: `$$` would end the $$-quoted function bodies and run the rest as SQL.
      expect(
        refused(() => new GraphileWorkerSql({ workerSchema: 'graphile_worker', uniqueSchema: 'x$$; drop table y; --' })),
      ).to.deep.equal(['uniqueSchema']);
      expect(refused(() => createGraphileWorkerBackend({ pgPool: pool, uniqueSchema: 'ok', workerSchema: 'g$&' }))).to.deep.equal([
        'workerSchema',
      ]);
      expect(refused(() => createGraphileWorkerBackend({ pgPool: pool, uniqueSchema: '', workerSchema: 'x'.repeat(64) }))).to.deep.equal([
        'workerSchema',
        'uniqueSchema',
      ]);
      expect(refused(() => makeUniqueJobsPreset({ uniqueSchema: 'a$`b' }))).to.deep.equal(['uniqueSchema']);
      expect(refused(() => withUniqueHelpers({}, { uniqueSchema: "a$'b" }))).to.deep.equal(['uniqueSchema']);
      expect(issuesOf(await rejectionOf(makeUniqueWorkerUtils({ pgPool: pool, uniqueSchema: 'u$1', logger: quietLogger })))).to.deep.equal([
        'uniqueSchema',
      ]);
      // Graphile's own options name Graphile's schema: the error says which one was given.
      expect(issuesOf(await rejectionOf(makeUniqueWorkerUtils({ pgPool: pool, schema: 'g$1', logger: quietLogger })))).to.deep.equal([
        'schema',
      ]);
      const preset = { worker: { schema: 'g$1' } };
      expect(issuesOf(await rejectionOf(makeUniqueWorkerUtils({ pgPool: pool, preset, logger: quietLogger })))).to.deep.equal([
        'preset.worker.schema',
      ]);
      const client = await pool.connect();
      try {
        expect(issuesOf(await rejectionOf(addJobWithClient(client, 't', {}, { unique: {} }, { uniqueSchema: '$$' })))).to.deep.equal([
          'uniqueSchema',
        ]);
      } finally {
        client.release();
      }
    });

    it('substitutes schema names in one pass: quotes, backslashes and placeholder text in a name are kept verbatim', async () => {
      const { graphileSchema, uniqueSchema } = schemas.current();
      // A Graphile schema whose name contains the adapter's own placeholder: a second replace pass
      // would have substituted inside it.
      const names = { workerSchema: `${graphileSchema}'":OJS_UNIQUE_SCHEMA`, uniqueSchema: `${uniqueSchema}'\\"` };
      const rendered = new GraphileWorkerSql(names).text('add-plain-job');
      expect(rendered).to.include(`"${graphileSchema}'"":OJS_UNIQUE_SCHEMA"`);
      const drop = () =>
        pool.query(
          `drop schema if exists "${names.uniqueSchema.replaceAll('"', '""')}" cascade; drop schema if exists "${names.workerSchema.replaceAll('"', '""')}" cascade`,
        );
      await drop();
      const backend = createGraphileWorkerBackend({ pgPool: pool, uniqueSchema: names.uniqueSchema, workerSchema: names.workerSchema });
      try {
        const { job } = await backend.enqueue({ type: 't', args: { n: 1 }, unique: {} });
        expect(await rejectionOf(backend.enqueue({ type: 't', args: { n: 2 }, unique: {} }))).to.be.instanceOf(DuplicateJobError);
        expect((await backend.cancel(job.id)).state).to.equal('cancelled');
        expect((await backend.getJob(job.id))?.state).to.equal('cancelled');
      } finally {
        await backend.close();
        await drop();
      }
    });

    it('sends the enqueue statements as named prepared statements, one name per text, and unnamed with preparedStatements: false', async () => {
      const { graphileSchema, uniqueSchema } = schemas.current();
      // One connection, so the statements the enqueues prepared are visible to the check.
      const single = makePool(1);
      const preparedOn = async (u: UniqueWorkerUtils) =>
        u.withPgClient(async (client) =>
          (await client.query<{ name: string }>("select name from pg_prepared_statements where name like 'ojsu:%' order by name")).rows.map(
            (r) => r.name,
          ),
        );
      const enqueueAll = async (u: UniqueWorkerUtils, tag: string) => {
        const policy = { keys: ['type', 'args'] as ('type' | 'args')[] } as const;
        await u.addJob('t', { tag }, { unique: { ...policy, on_conflict: 'ignore' } }); // try-enqueue inserts
        await u.addJob('t', { tag }, { unique: { ...policy, on_conflict: 'ignore' } }); // try-enqueue, duplicate
        await u.addJob('t', { tag }, { unique: { ...policy, on_conflict: 'replace' } }); // lock-and-read, replace-jobs
      };
      try {
        const unnamed = await makeUniqueWorkerUtils({
          pgPool: single,
          schema: graphileSchema,
          uniqueSchema,
          logger: quietLogger,
          preparedStatements: false,
        });
        await enqueueAll(unnamed, 'off');
        expect(await preparedOn(unnamed)).to.deep.equal([]);
        await unnamed.release();
        // Graphile's own setting, given in the preset, turns them off too.
        const viaPreset = await makeUniqueWorkerUtils({
          pgPool: single,
          preset: { worker: { schema: graphileSchema, preparedStatements: false } },
          uniqueSchema,
          logger: quietLogger,
        });
        await enqueueAll(viaPreset, 'preset');
        expect(await preparedOn(viaPreset)).to.deep.equal([]);
        await viaPreset.release();
        // ... in a preset it extends (the schema too), and through Graphile's noPreparedStatements.
        const viaExtends = await makeUniqueWorkerUtils({
          pgPool: single,
          preset: { extends: [{ worker: { schema: graphileSchema, preparedStatements: false } }] },
          uniqueSchema,
          logger: quietLogger,
        });
        await enqueueAll(viaExtends, 'extends');
        expect(await preparedOn(viaExtends)).to.deep.equal([]);
        await viaExtends.release();
        const viaFlag = await makeUniqueWorkerUtils({
          pgPool: single,
          schema: graphileSchema,
          uniqueSchema,
          logger: quietLogger,
          noPreparedStatements: true,
        });
        await enqueueAll(viaFlag, 'flag');
        expect(await preparedOn(viaFlag)).to.deep.equal([]);
        await viaFlag.release();
        // Unprepared, a client with only query(text, values) is enough.
        const held = await single.connect();
        try {
          const textOnly = {
            query: (text: string, values?: unknown[]) =>
              typeof text === 'string' ? held.query(text, values) : Promise.reject(new Error('object form')),
          };
          await held.query('begin');
          const viaClient = await addJobWithClient(
            textOnly,
            't',
            { tag: 'text-only' },
            { unique: {} },
            { uniqueSchema, workerSchema: graphileSchema, preparedStatements: false },
          );
          await held.query('commit');
          expect(viaClient.outcome).to.equal('created');
        } finally {
          held.release();
        }
        const named = await makeUniqueWorkerUtils({ pgPool: single, schema: graphileSchema, uniqueSchema, logger: quietLogger });
        await enqueueAll(named, 'on');
        await enqueueAll(named, 'on again'); // reuses the parsed statements (pg refuses a name reused for another text)
        const names = await preparedOn(named);
        // countDuplicates off (the default): the duplicate sends no count-duplicate statement.
        expect(names.map((name) => name.split(':')[1])).to.deep.equal(['lock-and-read', 'replace-jobs', 'try-enqueue']);
        expect(await count(':ou.jobs where terminal_state is null')).to.equal(7);
        await named.release();
      } finally {
        await single.end();
      }
      // The name is per rendered text: another schema pair on the same pool gets its own names,
      // and every file's name fits PostgreSQL's 63 bytes (a longer one would be truncated).
      const a = new GraphileWorkerSql({ workerSchema: graphileSchema, uniqueSchema });
      const b = new GraphileWorkerSql({ workerSchema: graphileSchema, uniqueSchema: `${uniqueSchema}_other` });
      expect(a.query('try-enqueue', [], true).name).to.not.equal(b.query('try-enqueue', [], true).name);
      expect(a.query('try-enqueue', [], false).name).to.equal(undefined);
      for (const file of Object.keys(sqlFiles) as SqlFileName[]) expect(Buffer.byteLength(a.query(file, [], true).name!)).to.be.at.most(63);
    });

    it('reads the ledger by index even on a brand-new install, so plans cached while the tables were empty do not scan them as they grow', async () => {
      const { graphileSchema, uniqueSchema } = await schemas.ownSchemas(); // a brand-new install, not the file's
      // One connection: the plans the first enqueues cache are the ones every later enqueue uses.
      const single = makePool(1);
      try {
        const u = await makeUniqueWorkerUtils({ pgPool: single, schema: graphileSchema, uniqueSchema, logger: quietLogger });
        const seqScans = () =>
          u.withPgClient(async (client) => {
            await client.query('select pg_stat_force_next_flush()');
            await client.query('select pg_stat_clear_snapshot()');
            const { rows } = await client.query<{ n: string }>(
              'select coalesce(sum(seq_scan), 0) as n from pg_stat_user_tables where schemaname = $1',
              [uniqueSchema],
            );
            return Number(rows[0]!.n);
          });
        const policy = { keys: ['type', 'args'] as ('type' | 'args')[], on_conflict: 'ignore' as const };
        for (let i = 0; i < 20; i++) await u.addJob('t', { i }, { unique: policy });
        // What autovacuum does to a young install once it has 50 rows: statistics saying "tiny",
        // under which a cached generic plan is a sequential scan, kept as the tables grow until
        // the next ANALYZE, so that the duplicate check slowed down as the ledger grew.
        await single.query(`analyze "${uniqueSchema}".jobs, "${uniqueSchema}".heads, "${graphileSchema}"._private_jobs`);
        await u.addJob('t', { i: 0 }, { unique: policy });
        const before = await seqScans();
        for (let i = 0; i < 150; i++) {
          await u.addJob('t', { i }, { unique: policy }); // duplicates of the first five, then inserts
          await u.addJob('t', { i }, { unique: { ...policy, on_conflict: 'replace' } }); // the locked read
        }
        expect((await seqScans()) - before).to.equal(0);
        await u.release();
      } finally {
        await single.end();
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
      const windowed = (
        await s.backend.enqueue({ type: 'r', args: { n: 3 }, unique: { keys: ['type', 'args'], states: ['cancelled'], period: 'PT1S' } })
      ).job;
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

    const ALL_BUT_TERMINAL = ['available', 'active', 'scheduled', 'retryable', 'pending'] as const;

    it('§6.3 after reclaim, a completed job stays visible to a wider policy after enqueues under narrower ones', async () => {
      // The conformance case, with a reclaim (no grace) before the last enqueue.
      const s = await makeSubject();
      const wide = { keys: ['type'], states: [...ALL_BUT_TERMINAL, 'completed'] } as const;
      const first = (await s.backend.enqueue({ type: 'welcome.send', args: {}, unique: wide })).job;
      await (await s.start(first.id)).complete();
      const narrow = (await s.backend.enqueue({ type: 'welcome.send', args: {}, unique: { keys: ['type'] } })).job;
      await s.backend.cancel(narrow.id);
      await s.backend.enqueue({ type: 'welcome.send', args: {}, unique: { keys: ['type'], period: 'PT1S' } });
      await s.backend.reclaim({ grace: 'PT0S' });
      const error = await rejectionOf(s.backend.enqueue({ type: 'welcome.send', args: {}, unique: wide }));
      expect(error).to.include({ existingJobId: first.id, existingJobState: 'completed' });
    });

    it('keeps a record its own policy does not need while a wider policy used on its key does, for that policy’s period', async () => {
      const s = await makeSubject();
      const scenario = async (type: string, period?: string) => {
        const wide = { keys: ['type'], states: [...ALL_BUT_TERMINAL, 'completed'], ...(period ? { period } : {}) } as const;
        // The wide policy's own job ends cancelled, a state it does not check: nothing keeps it.
        const w = (await s.backend.enqueue({ type, args: {}, unique: wide })).job;
        await s.backend.cancel(w.id);
        // A job under the default (narrow) policy completes: its own policy does not check completed.
        const n = (await s.backend.enqueue({ type, args: {}, unique: { keys: ['type'] } })).job;
        await (await s.start(n.id)).complete();
        return { w, n, wide };
      };
      const forever = await scenario('report.forever');
      const windowed = await scenario('report.windowed', 'PT3S');
      const result = await s.backend.reclaim({ grace: 'PT0S' });
      expect(result.reclaimed, 'the two cancelled wide-policy jobs').to.equal(2);
      expect(await s.backend.getJob(forever.w.id)).to.equal(null);
      const error = await rejectionOf(s.backend.enqueue({ type: 'report.forever', args: {}, unique: forever.wide }));
      expect(error).to.include({ existingJobId: forever.n.id, existingJobState: 'completed' });
      expect((await s.backend.getJob(windowed.n.id))?.state).to.equal('completed');
      // Once the wide policy's period has run out from the record's created_at, nothing needs it.
      // Counted on the database's clock (as reclaim counts it), never the producer's.
      const { rows: remaining } = await pool.query<{ ms: number }>(
        "select extract(epoch from ($1::timestamptz + interval '3 seconds' - clock_timestamp())) * 1000 as ms",
        [windowed.n.created_at],
      );
      const left = Number(remaining[0]!.ms);
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, left) + 200));
      expect((await s.backend.reclaim({ grace: 'PT0S' })).reclaimed).to.equal(1);
      expect(await s.backend.getJob(windowed.n.id)).to.equal(null);
      expect((await s.backend.getJob(forever.n.id))?.state).to.equal('completed');
      // The key's head row keeps the memory of the wide policy although no record of it is left.
      expect((await s.backend.enqueue({ type: 'report.windowed', args: {}, unique: windowed.wide })).outcome).to.equal('created');
    });

    it('a key whose records have no head record (its head reclaimed first) gets one on its next write: its records and retention still count', async () => {
      const s = await makeSubject();
      const policy = { keys: ['type'] as ('type' | 'args')[] };
      const live = (await s.backend.enqueue({ type: 'old.live', args: {}, unique: policy })).job;
      const gone = (await s.backend.enqueue({ type: 'old.gone', args: {}, unique: policy })).job;
      await s.backend.cancel(gone.id);
      // Retention memory: a wide policy (counting completed jobs) used on a key whose kept record
      // was enqueued under the narrow default.
      const wide = { keys: ['type'], states: ['available', 'active', 'scheduled', 'retryable', 'pending', 'completed'] } as const;
      const w = (await s.backend.enqueue({ type: 'old.kept', args: {}, unique: wide })).job;
      await s.backend.cancel(w.id);
      const kept = (await s.backend.enqueue({ type: 'old.kept', args: {}, unique: policy })).job;
      await (await s.start(kept.id)).complete();
      // No head record on any key, as when reclaim removed a key's head before its other records.
      await pool.query(`update "${s.backend.schemas.uniqueSchema}".jobs set head = null`);
      expect(await count(':ou.jobs where head')).to.equal(0);
      // A duplicate of a live job, read without a lock.
      expect(await rejectionOf(s.backend.enqueue({ type: 'old.live', args: {}, unique: policy }))).to.include({ existingJobId: live.id });
      // A replace takes the key's lock: its oldest record becomes the head (and stays it).
      const replaced = await s.backend.enqueue({ type: 'old.live', args: {}, unique: { ...policy, on_conflict: 'replace' } });
      expect(replaced).to.include({ outcome: 'replaced' });
      expect(await count(':ou.jobs where head and ojs_id = $1', [live.id])).to.equal(1);
      // A key whose only record is finished: concurrent enqueues still leave one live job.
      const outcomes = await Promise.allSettled(
        Array.from({ length: 8 }, () => s.backend.enqueue({ type: 'old.gone', args: {}, unique: policy })),
      );
      expect(outcomes.filter((o) => o.status === 'fulfilled')).to.have.length(1);
      expect(await count(':ou.jobs l join :gw._private_jobs j on j.id = l.job_id where l.type = $1', ['old.gone'])).to.equal(1);
      expect(await count(':ou.jobs where head and type = $1', ['old.gone'])).to.equal(1);
      // A new key: its first record is its head.
      await s.backend.enqueue({ type: 'new.key', args: {}, unique: policy });
      expect(await count(':ou.jobs where head and type = $1', ['new.key'])).to.equal(1);
      // The key's retention still keeps the completed record (the cancelled wide one goes), and
      // the wide policy still counts it.
      await s.backend.reclaim({ grace: 'PT0S' });
      expect(await s.backend.getJob(w.id)).to.equal(null);
      expect((await s.backend.getJob(kept.id))?.state).to.equal('completed');
      expect(await rejectionOf(s.backend.enqueue({ type: 'old.kept', args: {}, unique: wide }))).to.include({
        existingJobId: kept.id,
        existingJobState: 'completed',
      });
    });
  });
});

function schemasOf(s: GraphileWorkerSubject): { uniqueSchema: string; workerSchema: string } {
  const names = s.backend.schemas;
  return { uniqueSchema: names.uniqueSchema, workerSchema: names.workerSchema };
}
