/**
 * §8.1 strong uniqueness on Graphile Worker, under real contention: 200 concurrent enqueues of
 * one uniqueness key over a pool of 8 connections, 10 rounds per strategy. Every round must end
 * with exactly one live job for the key, and the outcomes must account for every call.
 *
 * The control: with the head-row lock removed from lock_and_read, the reject rounds admit
 * several jobs (checked by hand while writing this; see docs/design/graphile-worker.md).
 *
 * Then the lock order (docs/design/graphile-worker.md, "Lock order"): replaces, workers and
 * cancels racing on the same keys. The control: with lock_and_read taking the head record before
 * the Graphile rows (schema version 2), a 40P01 reached a caller in each of two runs.
 */
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import type pg from 'pg';
import { run, type Task } from 'graphile-worker';
import { isDuplicateJobError, type ConflictStrategy, type EnqueueResult } from '../../src/index.js';
import {
  addJobWithClient,
  createGraphileWorkerBackend,
  makeUniqueJobsPreset,
  type GraphileWorkerBackend,
} from '../../adapters/graphile-worker/index.js';
import { quietLogger } from '../conformance/subjects/graphile-worker.js';
import { isolatePerTest, makePool } from './graphile-worker-fixture.js';

const FILE = fileURLToPath(import.meta.url);
const CALLS = 200;
const ROUNDS = 10;
const POOL_SIZE = 8;

describe('graphile-worker adapter: concurrency (§8.1)', function () {
  this.timeout(300_000);
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

  /** The database's deadlock counter; a backend reports its own within a second or two of going idle. */
  const deadlocks = async () => {
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    const { rows } = await pool.query<{ n: string }>('select deadlocks as n from pg_stat_database where datname = current_database()');
    return Number(rows[0]!.n);
  };

  it('lock order: replaces racing workers that complete, fail and cancel the same keys never deadlock; no 40P01/40001 reaches a caller', async () => {
    // A worker's completion DELETE holds the job's Graphile row while its trigger labels the job's
    // record, which for a key's first job is the key's head (its lock). A replace locks the live
    // candidates' Graphile rows before the head, so the two never wait on each other in a cycle.
    // Half the replaces run in the caller's transaction (addJobWithClient), which the adapter never
    // retries: a deadlock or serialisation failure there would reach the caller. Cancels (OJS
    // CANCEL: Graphile row, then ledger row) run against the same keys.
    const { graphileSchema, uniqueSchema } = schemas.current();
    const KEYS = 40;
    const WAVES = 6;
    const before = await deadlocks();
    const workerPool = makePool(3);
    // Each task ends a moment after it starts, so completions land while the replaces run; every
    // third one fails (max_attempts 1: discarded, and a replace cancels it).
    const task: Task = async (payload) => {
      await new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 4)));
      if ((payload as { key: number }).key % 3 === 0) throw new Error('planned failure');
    };
    const runner = await run({
      pgPool: workerPool,
      schema: graphileSchema,
      taskList: { raced: task },
      concurrency: 4,
      noHandleSignals: true,
      pollInterval: 20,
      logger: quietLogger,
      preset: { extends: [makeUniqueJobsPreset({ uniqueSchema })] },
    });
    const failures: unknown[] = [];
    const settle = async (call: Promise<unknown>) => {
      try {
        await call;
      } catch (error) {
        // A replace of a running job without replaceActive is a duplicate (state active); a cancel
        // of a job that already ended is an invalid transition. Anything else is a failure.
        if (!isDuplicateJobError(error) && (error as { code?: string }).code !== 'invalid_transition') failures.push(error);
      }
    };
    const policy = { keys: ['type', 'args'], on_conflict: 'replace' } as const;
    const inCallersTransaction = async (args: { wave: number; key: number }) => {
      const client = await pool.connect();
      try {
        await client.query('begin');
        try {
          await addJobWithClient(client, 'raced', args, { maxAttempts: 1, unique: policy }, { uniqueSchema, workerSchema: graphileSchema });
          await client.query('commit');
        } catch (error) {
          await client.query('rollback');
          throw error;
        }
      } finally {
        client.release();
      }
    };
    try {
      for (let wave = 0; wave < WAVES; wave++) {
        // New keys each wave: a key's first job is its head record, whose completion the trigger
        // labels while a replace of the key may be taking the key's lock.
        const keys = Array.from({ length: KEYS }, (_, key) => ({ wave, key }));
        const firsts = await Promise.all(keys.map((args) => backend.enqueue({ type: 'raced', args, max_attempts: 1, unique: policy })));
        await Promise.all(
          keys.flatMap((args, index) => [
            settle(backend.enqueue({ type: 'raced', args, max_attempts: 1, unique: policy })),
            settle(inCallersTransaction(args)),
            settle(backend.cancel(firsts[index]!.job.id)),
            settle(inCallersTransaction(args)),
          ]),
        );
      }
      // Let the workers finish what is left, so every completion's trigger ran.
      const deadline = Date.now() + 20_000;
      while ((await pool.query(`select 1 from "${graphileSchema}"._private_jobs where attempts < max_attempts limit 1`)).rows.length > 0) {
        if (Date.now() > deadline) throw new Error('the workers did not drain the queue');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      await runner.stop();
      await workerPool.end();
    }
    expect(failures.map(String)).to.deep.equal([]);
    expect((await deadlocks()) - before, 'deadlocks detected in the database').to.equal(0);
    // Every job that left Graphile's table was labelled (a trigger chosen as a deadlock's victim
    // would have lost its label), and each key kept at most one live job.
    const { rows } = await pool.query<{ unlabelled: number; crowded: number }>(
      `select (select count(*)::int from "${uniqueSchema}".jobs l
                where l.terminal_state is null and not exists (select 1 from "${graphileSchema}"._private_jobs j where j.id = l.job_id)) as unlabelled,
              (select count(*)::int from (select l.fingerprint from "${uniqueSchema}".jobs l
                join "${graphileSchema}"._private_jobs j on j.id = l.job_id
                where l.terminal_state is null and j.attempts < j.max_attempts group by 1 having count(*) > 1) k) as crowded`,
    );
    expect(rows[0]).to.deep.equal({ unlabelled: 0, crowded: 0 });
  });
});
