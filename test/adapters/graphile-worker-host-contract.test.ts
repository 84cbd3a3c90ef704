/**
 * The contract between the adapter and the graphile-worker it runs on
 * (adapters/graphile-worker/graphile-worker-host.ts): one test per object of Graphile's schema
 * the adapter's SQL uses and per behaviour of Graphile's worker it assumes, each failing with a
 * message that says what changed and what in the adapter depends on it. Then what happens when
 * one is not met: the worker starts, plain adds work, unique adds fail naming it; and a newer
 * Graphile migration level that keeps them is accepted.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { Logger, makeWorkerUtils, runOnce, runTaskListOnce, type Job, type TaskList } from 'graphile-worker';
import type pg from 'pg';
import { BackendError, isBackendError } from '../../src/index.js';
import {
  addJobWithClient,
  createGraphileWorkerBackend,
  makeUniqueJobsPreset,
  makeUniqueWorkerUtils,
} from '../../adapters/graphile-worker/index.js';
import {
  GRAPHILE_BEHAVIOURS,
  GATEWAY_GRAPHILE_RELIANCES,
  GRAPHILE_RELIANCES,
  GRAPHILE_STALE_LOCK_INTERVAL,
  describeUnmet,
  unmetGraphileReliances,
  unmetReliancesError,
} from '../../adapters/graphile-worker/graphile-worker-host.js';
import { GraphileWorkerSql } from '../../adapters/graphile-worker/graphile-worker-sql.js';
import { sqlFiles } from '../../adapters/graphile-worker/generated/sql.js';
import { quietLogger } from '../conformance/subjects/graphile-worker.js';
import { isolatePerTest, makePool, type TestSchemas } from './graphile-worker-fixture.js';
import { rejection } from '../conformance/suite-context.js';

const FILE = fileURLToPath(import.meta.url);
const rejectionOf = (promise: Promise<unknown>): Promise<Error> => rejection(promise);

/** The adapter's options naming the two schemas, in one place. */
const presetFor = (names: TestSchemas) => makeUniqueJobsPreset({ uniqueSchema: names.uniqueSchema });
const backendFor = (pool: pg.Pool, names: TestSchemas, migrate: boolean) =>
  createGraphileWorkerBackend({ pgPool: pool, uniqueSchema: names.uniqueSchema, workerSchema: names.graphileSchema, migrate });
const utilsFor = (pool: pg.Pool, names: TestSchemas, logger: Logger = quietLogger) =>
  makeUniqueWorkerUtils({ pgPool: pool, schema: names.graphileSchema, uniqueSchema: names.uniqueSchema, logger });
const enqueueOptionsFor = (names: TestSchemas) => ({ uniqueSchema: names.uniqueSchema, workerSchema: names.graphileSchema });
/** The adapter's schema names from the fixture's. */
const namesOf = (names: TestSchemas) => ({ workerSchema: names.graphileSchema, uniqueSchema: names.uniqueSchema });

describe('graphile-worker host contract', function () {
  this.timeout(30_000);
  const schemas = isolatePerTest(FILE);
  let pool: pg.Pool;

  beforeEach(() => {
    pool = makePool(4);
  });
  afterEach(async () => {
    await pool.end();
  });

  const sqlOf = (names: TestSchemas) => new GraphileWorkerSql(namesOf(names));
  const q = async <R extends Record<string, unknown>>(text: string, values: unknown[] = []) => {
    const { graphileSchema, uniqueSchema } = schemas.current();
    return (await pool.query<R>(text.replaceAll(':gw', `"${graphileSchema}"`).replaceAll(':ou', `"${uniqueSchema}"`), values)).rows;
  };
  /**
   * Waits (bounded) until `done` holds for the rows of `text`: Graphile's worker does not await
   * its complete/fail write before `runOnce` resolves, so the row may not have settled yet.
   */
  const settledRows = async <R extends Record<string, unknown>>(text: string, done: (rows: R[]) => boolean): Promise<R[]> => {
    for (let attempt = 0; ; attempt++) {
      const rows = await q<R>(text);
      if (done(rows) || attempt >= 50) return rows;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };
  /** Graphile Worker's own migrations only, in a pair of the test's own. */
  const graphileOnly = async (): Promise<TestSchemas> => {
    const names = await schemas.ownSchemas();
    const utils = await makeWorkerUtils({ pgPool: pool, schema: names.graphileSchema, logger: quietLogger });
    await utils.release();
    return names;
  };
  const runWorkerOnce = (taskList: TaskList) => {
    const names = schemas.current();
    return runOnce({ pgPool: pool, schema: names.graphileSchema, taskList, logger: quietLogger, preset: { extends: [presetFor(names)] } });
  };
  const addPlain = async (identifier: string, spec: { maxAttempts?: number } = {}): Promise<Job> => {
    const names = schemas.current();
    const utils = await utilsFor(pool, names);
    try {
      return await utils.addJob(identifier, {}, spec);
    } finally {
      await utils.release();
    }
  };

  describe('objects of Graphile Worker’s schema the adapter’s SQL uses (GRAPHILE_RELIANCES)', () => {
    for (const reliance of GRAPHILE_RELIANCES) {
      it(`${reliance.id}: ${reliance.usedFor}`, async () => {
        const unmet = await unmetGraphileReliances(pool, sqlOf(schemas.current()), [reliance]);
        expect(
          unmet.map(describeUnmet),
          `graphile-worker's schema changed (${unmet.map(describeUnmet).join('; ')}); ojs-unique uses it for: ${reliance.usedFor}. ` +
            'Update graphile-worker-host.ts and the SQL that uses it (sql/functions/*.sql, get-job.sql, add-plain-job.sql), with a new SCHEMA_VERSION',
        ).to.deep.equal([]);
      });
    }
  });

  describe('objects of Graphile Worker’s schema the OJS gateway’s worker protocol uses (GATEWAY_GRAPHILE_RELIANCES)', () => {
    for (const reliance of GATEWAY_GRAPHILE_RELIANCES) {
      it(`${reliance.id}: ${reliance.usedFor}`, async () => {
        const unmet = await unmetGraphileReliances(pool, sqlOf(schemas.current()), [reliance]);
        expect(
          unmet.map(describeUnmet),
          `graphile-worker's schema changed (${unmet.map(describeUnmet).join('; ')}); the OJS gateway uses it for: ${reliance.usedFor}. ` +
            'Update graphile-worker-host.ts and the gateway SQL that uses it (server/sql/gateway-*.sql)',
        ).to.deep.equal([]);
      });
    }
  });

  describe('how Graphile Worker’s worker uses its rows (GRAPHILE_BEHAVIOURS)', () => {
    it(GRAPHILE_BEHAVIOURS.completionDeletesLockedRow, async () => {
      const names = schemas.current();
      const utils = await utilsFor(pool, names);
      try {
        const { job } = await utils.addJob('succeeds', {}, { unique: {} });
        const locks: (string | null)[] = [];
        // What the row looked like to the task: locked, as the trigger later sees it deleted.
        await runWorkerOnce({
          succeeds: async () => {
            locks.push(
              ...(await q<{ locked: string | null }>('select locked_at::text as locked from :gw._private_jobs')).map((row) => row.locked),
            );
          },
        });
        expect(locks, 'the worker ran the job with its row locked').to.have.length(1).and.not.include(null);
        const left = await settledRows('select id from :gw._private_jobs', (rows) => rows.length === 0);
        expect(left.length, 'a completed job’s row is deleted').to.equal(0);
        expect((await utils.getUniqueJob(job.id))?.state, 'job_deleted() saw the row deleted while locked, i.e. completed').to.equal(
          'completed',
        );
      } finally {
        await utils.release();
      }
    });

    it(GRAPHILE_BEHAVIOURS.lastFailureKeepsRow, async () => {
      const names = schemas.current();
      const utils = await utilsFor(pool, names);
      try {
        const { job } = await utils.addJob('fails', {}, { unique: {}, maxAttempts: 1 });
        await runWorkerOnce({
          fails: async () => {
            throw Object.assign(new Error('planned failure'), { failure: true });
          },
        });
        const rows = await settledRows<{ attempts: number; max_attempts: number; locked_at: string | null }>(
          'select attempts, max_attempts, locked_at from :gw._private_jobs',
          (found) => found.every((row) => row.locked_at === null),
        );
        expect(rows, 'the failed job keeps its row, unlocked, with attempts = max_attempts').to.deep.equal([
          { attempts: 1, max_attempts: 1, locked_at: null },
        ]);
        expect((await utils.getUniqueJob(job.id))?.state).to.equal('discarded');
      } finally {
        await utils.release();
      }
    });

    it(GRAPHILE_BEHAVIOURS.lastFailureUpdatesLockedAt, async () => {
      const names = schemas.current();
      const utils = await utilsFor(pool, names);
      try {
        const unique = { keys: ['type'], on_conflict: 'ignore', x_successor: 'latest' } as const;
        await utils.addJob('fails', { n: 1 }, { unique, maxAttempts: 1 });
        let successor: string | undefined;
        await runWorkerOnce({
          fails: async (payload) => {
            // The first job runs: a duplicate now is kept as its successor (which runs once only).
            if ((payload as { n: number }).n === 1) {
              const again = await utils.addJob('fails', { n: 2 }, { unique, maxAttempts: 1 });
              successor = again.outcome === 'deduplicated' ? again.successor?.id : undefined;
            }
            throw Object.assign(new Error('planned failure'), { failure: true });
          },
        });
        expect(successor, 'a successor was kept while the job ran').to.be.a('string');
        // runOnce may run the successor too (then it fails its one attempt, flushed after runOnce returns), or end before it was added.
        let added = await utils.getUniqueJob(successor!);
        for (let attempt = 0; added?.state === 'active' && attempt < 50; attempt++) {
          await new Promise((resolve) => setTimeout(resolve, 100));
          added = await utils.getUniqueJob(successor!);
        }
        expect(added?.state, 'job_failed() saw the failure and added the successor').to.be.oneOf(['available', 'discarded']);
        expect(added?.args).to.deep.equal({ n: 2 });
      } finally {
        await utils.release();
      }
    });

    it(GRAPHILE_BEHAVIOURS.failureMovesRunAtByBackoff, async () => {
      const names = schemas.current();
      const utils = await utilsFor(pool, names);
      try {
        const { job } = await utils.addJob('fails', {}, { unique: {}, maxAttempts: 1 });
        const [before] = await q<{ at: Date }>('select clock_timestamp() as at');
        await runWorkerOnce({
          fails: async () => {
            throw new Error('planned failure');
          },
        });
        const [after] = await q<{ at: Date }>('select clock_timestamp() as at');
        await settledRows<{ locked_at: string | null }>('select locked_at from :gw._private_jobs', (rows) =>
          rows.every((row) => row.locked_at === null),
        );
        // The finish time the adapter derives (candidateFinishedAt) lies between the run's bounds.
        const found = await utils.getUniqueJob(job.id);
        expect(found?.state).to.equal('discarded');
        const derived = Date.parse(found!.scheduled_at) - Math.round(Math.exp(1) * 1000);
        expect(derived, 'run_at minus exp(attempts) s is no longer the failure time').to.be.within(
          before!.at.getTime() - 1,
          after!.at.getTime() + 1,
        );
      } finally {
        await utils.release();
      }
    });

    it(GRAPHILE_BEHAVIOURS.exhaustedRowIsNeverFetched, async () => {
      const job = await addPlain('fenced', { maxAttempts: 5 });
      // What cancel_jobs() does to a running job, here to a waiting one.
      await q('update :gw._private_jobs set attempts = max_attempts where id = $1', [job.id]);
      const ran: string[] = [];
      await runWorkerOnce({ fenced: async () => void ran.push('fenced') });
      expect(ran, 'a worker fetched a row with attempts = max_attempts: fencing no longer stops a retry').to.deep.equal([]);
    });

    it(GRAPHILE_BEHAVIOURS.fetchSkipsLockedRows, async () => {
      const job = await addPlain('held');
      const holder = await pool.connect();
      const ran: string[] = [];
      try {
        await holder.query('begin');
        await holder.query(`select 1 from "${schemas.current().graphileSchema}"._private_jobs where id = $1 for update`, [job.id]);
        await runWorkerOnce({ held: async () => void ran.push('held') });
        expect(
          ran,
          'a worker started a job whose row another transaction holds: lock_and_read() no longer keeps workers off its candidates',
        ).to.deep.equal([]);
      } finally {
        await holder.query('rollback');
        holder.release();
      }
      await runWorkerOnce({ held: async () => void ran.push('held') });
      expect(ran).to.deep.equal(['held']);
    });

    it(GRAPHILE_BEHAVIOURS.staleLockAfterFourHours, async () => {
      const stale = await addPlain('stale');
      const fresh = await addPlain('fresh');
      const lock = (id: string, age: string) =>
        q(`update :gw._private_jobs set locked_at = now() - $2::interval, locked_by = 'gone', attempts = 1 where id = $1`, [id, age]);
      await lock(stale.id, `${GRAPHILE_STALE_LOCK_INTERVAL} 1 minute`);
      await lock(fresh.id, `${GRAPHILE_STALE_LOCK_INTERVAL} -1 minute`);
      const ran: string[] = [];
      // runTaskListOnce clears stale locks first (resetLockedAt), as every running worker does from time to time.
      const client = await pool.connect();
      try {
        const taskList: TaskList = { stale: async () => void ran.push('stale'), fresh: async () => void ran.push('fresh') };
        await runTaskListOnce({ schema: schemas.current().graphileSchema, logger: quietLogger }, taskList, client).promise;
      } finally {
        client.release();
      }
      expect(
        ran,
        `Graphile's stale-lock threshold is no longer ${GRAPHILE_STALE_LOCK_INTERVAL}: update GRAPHILE_STALE_LOCK_INTERVAL and sql/functions/*.sql`,
      ).to.deep.equal(['stale']);
      // The adapter's SQL says the same threshold, and no other.
      const intervals = [...sqlFiles['install-functions'].matchAll(/interval '(\d+ hours?)'/g)].map((match) => match[1]);
      expect(intervals).to.have.length.greaterThan(0);
      expect(new Set(intervals)).to.deep.equal(new Set([GRAPHILE_STALE_LOCK_INTERVAL]));
    });

    it(GRAPHILE_BEHAVIOURS.addJobFillsDefaults, async () => {
      const rows = await q<{ id: string; run_at: Date | null; max_attempts: number; key: string | null }>(
        `select * from :gw.add_job(identifier => 'defaults', payload => '{}'::json, queue_name => null, run_at => null,
           max_attempts => null, job_key => null, priority => null, flags => null)`,
      );
      expect(rows).to.have.length(1);
      expect(rows[0]!.id, 'add_job returned the new row').to.be.a('string');
      expect(rows[0]!.run_at, 'add_job filled in run_at (insert_job records it as scheduled_at)').to.be.instanceOf(Date);
      expect(rows[0]!.max_attempts, "add_job filled in Graphile's default max_attempts").to.equal(25);
      expect((await q<{ n: number }>('select count(*)::int as n from :gw._private_jobs'))[0]!.n).to.equal(1);
    });
  });

  describe('when Graphile Worker’s schema does not meet a reliance', () => {
    it('names each unmet reliance: a renamed column, a column of another type, a missing function, an empty schema', async () => {
      const names = await graphileOnly();
      const sql = sqlOf(names);
      expect(await unmetGraphileReliances(pool, sql)).to.deep.equal([]);
      await pool.query(`alter table "${names.graphileSchema}"._private_jobs rename column updated_at to changed_at`);
      const renamed = await unmetGraphileReliances(pool, sql);
      expect(renamed.map(describeUnmet)).to.deep.equal(['_private_jobs.updated_at is missing']);
      expect(unmetReliancesError(sql, renamed).message).to.match(
        /Graphile Worker's schema ".*" lacks what ojs-unique relies on: _private_jobs.updated_at is missing\. This graphile-worker version changed them/,
      );
      // A schema of our own making, standing for a Graphile that changed more.
      const made = sqlOf({ graphileSchema: `${names.graphileSchema}_made`, uniqueSchema: names.uniqueSchema });
      await pool.query(`create schema "${made.names.workerSchema}";
        create table "${made.names.workerSchema}"._private_jobs (id int, payload json, run_at timestamptz, attempts smallint,
          max_attempts smallint, locked_at timestamptz, key varchar(512), updated_at timestamptz, priority smallint, revision int,
          last_error text)`);
      try {
        expect((await unmetGraphileReliances(pool, made)).map(describeUnmet)).to.deep.equal([
          '_private_jobs.id is integer, not bigint',
          '_private_jobs.key is character varying(512), not text',
          'add_job(identifier, payload, queue_name, run_at, max_attempts, job_key, priority, flags, job_key_mode) returning _private_jobs is missing',
        ]);
      } finally {
        await pool.query(`drop schema "${made.names.workerSchema}" cascade`);
      }
      const nowhere = sqlOf({ graphileSchema: `${names.graphileSchema}_none`, uniqueSchema: names.uniqueSchema });
      const none = await unmetGraphileReliances(pool, nowhere);
      expect(none).to.have.length(GRAPHILE_RELIANCES.length);
      expect(unmetReliancesError(nowhere, none).message).to.match(
        /has no _private_jobs table and no add_job function: is Graphile Worker migrated there\?/,
      );
    });

    it('a worker with the preset still starts and runs jobs, plain adds work, and unique adds fail with a BackendError naming it, writing nothing', async () => {
      const names = await graphileOnly();
      const gw = `"${names.graphileSchema}"`;
      // A future Graphile whose add_job returns its public `jobs` view instead of the table's row
      // (its own addJob selects * from it, so Graphile itself does not notice).
      await pool.query(`
        drop function ${gw}.add_job(text, json, text, timestamptz, int, text, int, text[], text);
        create function ${gw}.add_job(identifier text, payload json default null, queue_name text default null,
          run_at timestamptz default null, max_attempts int default null, job_key text default null,
          priority int default null, flags text[] default null, job_key_mode text default 'replace')
        returns ${gw}.jobs language plpgsql as $$
        declare
          v_id bigint;
          v_job ${gw}.jobs;
        begin
          select j.id into v_id from ${gw}.add_jobs(array[(identifier, payload, queue_name, run_at, max_attempts::smallint,
            job_key, priority::smallint, flags)::${gw}.job_spec], job_key_mode = 'preserve_run_at') j;
          select * into v_job from ${gw}.jobs where id = v_id;
          return v_job;
        end
        $$;`);
      const warnings: string[] = [];
      const logger = new Logger(() => (level, message) => {
        if (level === 'warning') warnings.push(message);
      });
      const utils = await utilsFor(pool, names, logger);
      const backend = backendFor(pool, names, true);
      try {
        expect(warnings.join('\n')).to.match(
          /ojs-unique: .*lacks what ojs-unique relies on \(add_job\(identifier, .*\) returning _private_jobs is not there \(found: add_job\(.*\) returns .*jobs\)\)/,
        );
        const plain = await utils.addJob('plain', { n: 1 });
        expect(plain.task_identifier).to.equal('plain');
        expect(await utils.addJobs([{ identifier: 'plain', payload: { n: 2 } }])).to.have.length(1);
        const ran: unknown[] = [];
        await runOnce({
          pgPool: pool,
          schema: names.graphileSchema,
          logger,
          preset: { extends: [presetFor(names)] },
          taskList: { plain: async (payload) => void ran.push(payload) },
        });
        expect(ran).to.have.deep.members([{ n: 1 }, { n: 2 }]);

        const refusals = [
          await rejectionOf(utils.addJob('unique', {}, { unique: {} })),
          await rejectionOf(utils.addJobs([{ identifier: 'unique', payload: {}, unique: {} }])),
          await rejectionOf(backend.enqueue({ type: 'unique', args: {}, unique: {} })),
        ];
        const client = await pool.connect();
        try {
          await client.query('begin');
          refusals.push(await rejectionOf(addJobWithClient(client, 'unique', {}, { unique: {} }, enqueueOptionsFor(names))));
          await client.query('commit'); // the caller's transaction is still usable
        } finally {
          client.release();
        }
        for (const error of refusals) {
          expect(error).to.be.instanceOf(BackendError);
          expect(isBackendError(error) && error.written).to.equal(false);
          expect(error.message).to.match(
            /lacks what ojs-unique relies on: add_job\(identifier, payload, queue_name, run_at, max_attempts, job_key, priority, flags, job_key_mode\) returning _private_jobs/,
          );
        }
        const { rows } = await pool.query(
          `select count(*)::int as n from ${gw}._private_jobs where task_id in (select id from ${gw}._private_tasks where identifier = 'unique')`,
        );
        expect(rows[0].n, 'nothing of a refused add was written').to.equal(0);
        const ours = await pool.query('select 1 from pg_namespace where nspname = $1', [names.uniqueSchema]);
        expect(ours.rows, 'the adapter’s schema was left alone').to.deep.equal([]);
      } finally {
        await backend.close();
        await utils.release();
      }
    });

    it('a reliance lost while the process runs is named on the next unique add', async () => {
      const names = schemas.current();
      // One connection: the one whose reliances were checked is the one the adds run on.
      const single = makePool(1);
      const utils = await utilsFor(single, names);
      try {
        expect((await utils.addJob('first', {}, { unique: {} })).outcome).to.equal('created');
        await q('alter table :gw._private_jobs rename column locked_at to claimed_at');
        // The connection checked the reliances already: this add fails on the SQL itself …
        const bare = await rejectionOf(utils.addJob('second', {}, { unique: {} }));
        expect(bare).to.be.instanceOf(BackendError);
        expect(bare.message).to.match(/42703/);
        // … which makes the next one check again, and name what is missing.
        const named = await rejectionOf(utils.addJob('third', {}, { unique: {} }));
        expect(named.message).to.match(/lacks what ojs-unique relies on: _private_jobs.locked_at is missing/);
      } finally {
        await utils.release();
        await single.end();
      }
    });

    it('a Graphile Worker schema at a newer migration level (simulated 21) that keeps every reliance still takes unique adds', async () => {
      const names = schemas.current();
      await q(`insert into :gw.migrations (id, breaking) values (21, false)`);
      // Graphile itself warns about the level and carries on; so does the preset.
      const utils = await utilsFor(pool, names);
      const backend = backendFor(pool, names, false);
      try {
        expect((await utils.addJob('after_21', { via: 'utils' }, { unique: {} })).outcome).to.equal('created');
        expect((await backend.enqueue({ type: 'after_21_backend', args: { via: 'backend' }, unique: {} })).outcome).to.equal('created');
        const ran: unknown[] = [];
        await runWorkerOnce({
          after_21: async (payload) => void ran.push(payload),
          after_21_backend: async (payload) => void ran.push(payload),
        });
        expect(ran).to.have.deep.members([{ via: 'utils' }, { via: 'backend' }]);
      } finally {
        await backend.close();
        await utils.release();
      }
    });
  });
});
