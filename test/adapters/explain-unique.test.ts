/**
 * explainUnique on every backend and entry point, against the live store: the key and pre-image,
 * the jobs found under it (state, window end, counted), the outcome an add would have now, bad
 * input refused naming the field, and nothing written (the store's contents compared before and
 * after). Real Redis and PostgreSQL.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { Redis } from 'ioredis';
import type pg from 'pg';
import { createBullMQBackend, withUniqueness } from '../../adapters/bullmq/index.js';
import { makeUniqueWorkerUtils } from '../../adapters/graphile-worker/index.js';
import { computeUniquenessKey, isInvalidJobInputError, parseUniquePolicy, type JobInput, type UniqueExplanation } from '../../src/index.js';
import type { ConformanceSubject } from '../conformance/conformance-subject.js';
import { cliArgs } from '../cli-command.js';
import createBullMQSubject from '../conformance/subjects/bullmq.js';
import createMemorySubject from '../conformance/subjects/memory.js';
import { createGraphileWorkerSubject, databaseUrl, quietLogger } from '../conformance/subjects/graphile-worker.js';
import { rejection } from '../conformance/suite-context.js';
import { RUN_SALT } from '../run-salt.js';
import { REDIS_URL, useRedisPrefix } from './bullmq-test-redis.js';
import { isolatePerTest, makePool } from './graphile-worker-fixture.js';

const FILE = fileURLToPath(import.meta.url);

/** The real CLI, from source (one process per call: keep them few). */
function cli(args: string[], job: unknown) {
  const path = join(mkdtempSync(join(tmpdir(), 'ojs-unique-explain-')), 'job.json');
  writeFileSync(path, JSON.stringify(job));
  const result = spawnSync(process.execPath, cliArgs('explain', path, ...args), { encoding: 'utf8' });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

type Explainable = ConformanceSubject & {
  backend: ConformanceSubject['backend'] & { explainUnique(job: JobInput): Promise<UniqueExplanation> };
};

interface Case {
  name: string;
  make(): Promise<Explainable>;
  /** The store's contents, to compare before and after an explain. */
  snapshot(): Promise<unknown>;
}

/**
 * Every key under the prefix with its contents: any write shows. Hashes and sets by their sorted
 * members (a hashtable's DUMP order moves with Redis's incremental rehash, which reads drive),
 * anything else by its DUMP.
 */
async function redisSnapshot(redis: Redis, prefix: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    for (const key of keys) {
      const type = await redis.type(key);
      if (type === 'hash') {
        const fields = await redis.hgetallBuffer(key);
        out[key] = JSON.stringify(
          Object.entries(fields)
            .map(([f, v]) => [f, v.toString('hex')])
            .sort(),
        );
      } else if (type === 'set') out[key] = JSON.stringify((await redis.smembers(key)).sort());
      else out[key] = (await redis.dumpBuffer(key))?.toString('hex') ?? '';
    }
  } while (cursor !== '0');
  return out;
}

async function pgSnapshot(pool: pg.Pool, schemas: { graphileSchema: string; uniqueSchema: string }): Promise<unknown> {
  const { rows } = await pool.query(
    `select (select coalesce(json_agg(l order by l.job_id), '[]') from "${schemas.uniqueSchema}".jobs l) as ledger,
            (select coalesce(json_agg(j order by j.id), '[]') from "${schemas.graphileSchema}"._private_jobs j) as jobs`,
  );
  return rows[0];
}

describe('explainUnique: what an add would do now, writing nothing', function () {
  this.timeout(30_000);
  const gwSchemas = isolatePerTest(FILE);
  let redis: Redis;
  let pool: pg.Pool;
  let subject: Explainable | null = null;
  before(() => {
    redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    pool = makePool(4);
  });
  after(async () => {
    await redis.quit();
    await pool.end();
  });
  afterEach(async function () {
    await subject?.close({ passed: this.currentTest?.state === 'passed' });
    subject = null;
  });

  const cases: Case[] = [
    {
      name: 'memory',
      make: async () => (await createMemorySubject()) as Explainable,
      snapshot: async () => (subject!.backend as unknown as { jobs(): unknown }).jobs(),
    },
    (() => {
      let prefix = '';
      return {
        name: 'bullmq',
        make: async () => {
          prefix = `ojs-test:${RUN_SALT}:explain-${randomUUID()}`;
          return (await createBullMQSubject({ prefix })) as Explainable;
        },
        snapshot: () => redisSnapshot(redis, prefix),
      };
    })(),
    {
      name: 'graphile-worker',
      make: async () => (await createGraphileWorkerSubject({ ...gwSchemas.current(), logger: quietLogger })) as unknown as Explainable,
      snapshot: () => pgSnapshot(pool, gwSchemas.current()),
    },
  ];

  for (const c of cases) {
    describe(c.name, () => {
      it('before an add: created, the key and pre-image; after it: rejected or deduplicated naming the job; nothing written', async () => {
        const s = (subject = await c.make());
        const job = { type: 'report.build', queue: 'reports', args: { day: '2026-02-12' }, unique: { keys: ['type', 'args'] } } as const;
        const expected = computeUniquenessKey(job, parseUniquePolicy(job.unique));
        const before = await s.backend.explainUnique(job);
        expect(before).to.deep.include({
          uniqueness_key: expected.key,
          canonical: expected.canonical,
          outcome: 'created',
          existing_job_id: null,
        });
        expect(before.jobs).to.deep.equal([]);
        const created = (await s.backend.enqueue(job)).job;
        const snapshot = await c.snapshot();
        const rejected = await s.backend.explainUnique(job);
        expect(rejected).to.deep.include({ outcome: 'rejected', existing_job_id: created.id, reason: 'duplicate' });
        expect(rejected.jobs).to.have.length(1);
        expect(rejected.jobs[0]).to.deep.include({
          id: created.id,
          state: 'available',
          counted: true,
          window_end: null,
          created_at: created.created_at,
        });
        const ignored = await s.backend.explainUnique({ ...job, unique: { ...job.unique, on_conflict: 'ignore' } });
        expect(ignored).to.deep.include({ outcome: 'deduplicated', existing_job_id: created.id });
        const replaced = await s.backend.explainUnique({ ...job, unique: { ...job.unique, on_conflict: 'replace' } });
        expect(replaced).to.deep.include({ outcome: 'replaced', existing_job_id: created.id, replaces: [created.id] });
        expect(await c.snapshot(), 'explain wrote nothing').to.deep.equal(snapshot);
        // And the add it explained does what it said.
        expect((await s.backend.enqueue({ ...job, unique: { ...job.unique, on_conflict: 'ignore' } })).outcome).to.equal('deduplicated');
      });

      it('a completed job: counted by a policy whose states include completed, listed but not counted by the default', async () => {
        const s = (subject = await c.make());
        const unique = { keys: ['type'], states: ['available', 'active', 'completed'], on_conflict: 'ignore' } as const;
        const job = { type: 'sync.done', args: {}, unique };
        const created = (await s.backend.enqueue(job)).job;
        await (await s.start(created.id)).complete();
        const counting = await s.backend.explainUnique(job);
        expect(counting).to.deep.include({ outcome: 'deduplicated', existing_job_id: created.id });
        expect(counting.jobs.map((j) => [j.id, j.state, j.counted])).to.deep.equal([[created.id, 'completed', true]]);
        const byDefault = await s.backend.explainUnique({ ...job, unique: { keys: ['type'] } });
        expect(byDefault).to.deep.include({ outcome: 'created', existing_job_id: null });
        expect(byDefault.jobs.map((j) => [j.id, j.state, j.counted, j.not_counted])).to.deep.equal([
          [created.id, 'completed', false, 'state'],
        ]);
      });

      it('with a period: each job carries its window end (created_at + period)', async () => {
        const s = (subject = await c.make());
        const job = { type: 'digest', args: {}, unique: { keys: ['type'], period: 'PT1H', on_conflict: 'ignore' } } as const;
        const created = (await s.backend.enqueue(job)).job;
        const explained = await s.backend.explainUnique(job);
        expect(explained).to.deep.include({ outcome: 'deduplicated', existing_job_id: created.id });
        expect(explained.jobs[0]!.window_end).to.equal(new Date(Date.parse(created.created_at) + 3_600_000).toISOString());
        expect(Date.parse(explained.now)).to.be.below(Date.parse(explained.jobs[0]!.window_end!));
      });

      it('bad input is refused as the enqueue refuses it, naming the field; a job without a policy has no key', async () => {
        const s = (subject = await c.make());
        const none = await rejection(s.backend.explainUnique({ type: 'a', args: {} }));
        expect(isInvalidJobInputError(none) && none.issues.map((i) => i.path)).to.deep.equal(['unique']);
        const bad = await rejection(s.backend.explainUnique({ type: 'a', args: {}, unique: { keys: ['type'], period: 'soon' } as never }));
        expect(isInvalidJobInputError(bad) && bad.issues.map((i) => i.path)).to.deep.equal(['unique.period']);
        expect(bad.message).not.to.contain('"a"');
      });
    });
  }

  describe('entry points', () => {
    const ctx = useRedisPrefix(FILE);

    it('bullmq withUniqueness(queue).explainUnique: as add takes it (the default policy applies), the same answer as the backend', async () => {
      const queue = withUniqueness(
        ctx.queue('mail', { defaultJobOptions: { unique: { keys: ['type', 'args'], on_conflict: 'ignore' } } as never }),
      );
      const backend = createBullMQBackend({ connection: ctx.redis, prefix: ctx.prefix });
      ctx.closeLater(backend);
      expect((await queue.explainUnique('welcome', { to: 1 })).outcome).to.equal('created');
      const added = await queue.add('welcome', { to: 1 });
      const before = await redisSnapshot(ctx.redis, ctx.prefix);
      const viaQueue = await queue.explainUnique('welcome', { to: 1 });
      expect(viaQueue).to.deep.include({ outcome: 'deduplicated', existing_job_id: added.id });
      const viaBackend = await backend.explainUnique({
        type: 'welcome',
        queue: 'mail',
        args: { to: 1 },
        unique: { keys: ['type', 'args'], on_conflict: 'ignore' },
      });
      expect({ ...viaBackend, now: null }).to.deep.equal({ ...viaQueue, now: null });
      expect(await redisSnapshot(ctx.redis, ctx.prefix)).to.deep.equal(before);
      const none = await rejection(withUniqueness(ctx.queue('plain')).explainUnique('x', {}));
      expect(isInvalidJobInputError(none) && none.issues.map((i) => i.path)).to.deep.equal(['opts.unique']);
    });

    it('ojs-unique explain --redis-url --prefix: the backend’s answer, in plain words', async function () {
      this.timeout(90_000);
      const backend = createBullMQBackend({ connection: ctx.redis, prefix: ctx.prefix });
      ctx.closeLater(backend);
      const job = { type: 'report.build', queue: 'reports', args: { day: 1 }, unique: { keys: ['type'], period: 'PT1H' } } as const;
      const created = (await backend.enqueue(job)).job;
      const before = await redisSnapshot(ctx.redis, ctx.prefix);
      const expected = await backend.explainUnique(job);
      const { status, stdout, stderr } = cli(['--redis-url', REDIS_URL, '--prefix', ctx.prefix], job);
      expect(status, stderr).to.equal(0);
      const lines = stdout.trim().split('\n');
      expect(lines[0]).to.equal(`key:       ${expected.uniqueness_key}`);
      expect(lines[1]).to.equal(`pre-image: ${expected.canonical}`);
      expect(lines.slice(3)).to.deep.equal([
        'jobs under the key: 1',
        `  ${created.id} (queue reports): available, created ${created.created_at}, window ends ${expected.jobs[0]!.window_end}, counted`,
        `outcome:   rejected (an add fails with a duplicate error naming job ${created.id})`,
      ]);
      expect(await redisSnapshot(ctx.redis, ctx.prefix)).to.deep.equal(before);
    });

    it('ojs-unique explain --database-url --graphile-schema --unique-schema --json: the backend’s answer', async function () {
      this.timeout(90_000);
      const s = (subject = (await createGraphileWorkerSubject({ ...gwSchemas.current(), logger: quietLogger })) as unknown as Explainable);
      const job = { type: 'sync', args: { n: 1 }, unique: { keys: ['type'], on_conflict: 'replace' } } as const;
      const created = (await s.backend.enqueue(job)).job;
      const before = await pgSnapshot(pool, gwSchemas.current());
      const { graphileSchema, uniqueSchema } = gwSchemas.current();
      const { status, stdout, stderr } = cli(
        ['--database-url', databaseUrl(), '--graphile-schema', graphileSchema, '--unique-schema', uniqueSchema, '--json'],
        job,
      );
      expect(status, stderr).to.equal(0);
      const answer = JSON.parse(stdout) as UniqueExplanation;
      expect({ ...answer, now: null }).to.deep.equal({ ...(await s.backend.explainUnique(job)), now: null });
      expect(answer).to.deep.include({ outcome: 'replaced', existing_job_id: created.id });
      expect(await pgSnapshot(pool, gwSchemas.current())).to.deep.equal(before);
    });

    it('graphile-worker makeUniqueWorkerUtils().explainUnique: as addJob takes it', async () => {
      const schemas = gwSchemas.current();
      const utils = await makeUniqueWorkerUtils({
        connectionString: databaseUrl(),
        schema: schemas.graphileSchema,
        uniqueSchema: schemas.uniqueSchema,
        logger: quietLogger,
      });
      try {
        const spec = { unique: { keys: ['type', 'args'], on_conflict: 'reject' } } as const;
        expect((await utils.explainUnique('send_email', { to: 1 }, spec)).outcome).to.equal('created');
        const added = await utils.addJob('send_email', { to: 1 }, spec);
        const before = await pgSnapshot(pool, schemas);
        const explained = await utils.explainUnique('send_email', { to: 1 }, spec);
        expect(explained).to.deep.include({ outcome: 'rejected', existing_job_id: added.job.id });
        expect(explained.jobs.map((j) => [j.id, j.queue, j.counted])).to.deep.equal([[added.job.id, 'default', true]]);
        expect(await pgSnapshot(pool, schemas)).to.deep.equal(before);
        const none = await rejection(utils.explainUnique('send_email', {}, {} as never));
        expect(isInvalidJobInputError(none) && none.issues.map((i) => i.path)).to.deep.equal(['unique']);
      } finally {
        await utils.release();
      }
    });
  });
});
