/**
 * `withUniqueness(queue)` and the adapter's Redis-side behaviour beyond the conformance suite:
 * outcomes on the returned job, BullMQ option combinations, addBulk, events, the cancelled
 * archive, the removeOnComplete rule, the sidecar's lifetime and its cleanup. Real Redis.
 */
import { execFileSync } from 'node:child_process';
import { Queue, QueueEvents, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { expect } from 'chai';
import { createBullMQBackend, removeUniquenessIndex, withUniqueness, type UniqueJobsOptions } from '../../adapters/bullmq/index.js';
import { BackendError, DuplicateJobError, InvalidJobInputError, computeUniquenessKey, parseUniquePolicy } from '../../src/index.js';
import { rejection } from '../conformance/suite-context.js';
import { indexEntries, REDIS_URL, redisTimeMs, useRedisPrefix, type IndexEntry } from './bullmq-test-redis.js';
import { replacedIds } from '../replaced-ids.js';

const FILE = 'bullmq-with-uniqueness.test.ts';

/**
 * For the tests of the index: not the default states, so a per-queue policy takes the general
 * path (bullmq-native-path.ts); the native path's jobs have no index entry.
 */
const INDEXED_STATES = ['available', 'active', 'scheduled', 'retryable'] as const;

/** The index entries of one key, under the test's prefix. */
function entriesOf(ctx: { redis: Redis; prefix: string }, index: string, uniquenessKey: string): Promise<IndexEntry[]> {
  return indexEntries(ctx.redis, `${ctx.prefix}:${index}`, uniquenessKey);
}

/**
 * Back-dates a finished job's `finishedOn` past the scripts' replay grace (OJS_REPLAY_GRACE_MS in
 * includes/ojs-index.lua), as if it had finished minutes ago: the sweep and a re-add may reclaim it.
 */
async function pastReplayGrace(ctx: { redis: Redis; prefix: string }, queue: string, ...ids: string[]): Promise<void> {
  const longAgo = (await redisTimeMs(ctx.redis)) - 3_600_000;
  for (const id of ids) await ctx.redis.hset(`${ctx.prefix}:${queue}:${id}`, 'finishedOn', longAgo);
}

async function ojsKeys(ctx: { redis: { keys(p: string): Promise<string[]> }; prefix: string }): Promise<string[]> {
  return (await ctx.redis.keys(`${ctx.prefix}:*ojs:*`)).map((key) => key.slice(ctx.prefix.length + 1)).sort();
}

describe('bullmq adapter: withUniqueness(queue)', function () {
  this.timeout(20_000);
  const ctx = useRedisPrefix(FILE);

  describe('outcomes on the returned job', function () {
    it('created, then ignore returns the EXISTING job (its id, name and data, not the new data) with its state', async function () {
      const queue = withUniqueness(ctx.queue('mail'));
      const unique = { keys: ['type', 'args'], args_keys: ['user_id'], on_conflict: 'ignore' } as const;
      const first = await queue.add('welcome', { user_id: 42, template: 'a' }, { unique });
      expect(first.unique).to.include({ outcome: 'created' });
      expect(first.unique!.uniquenessKey).to.equal(
        computeUniquenessKey({ type: 'welcome', queue: 'mail', args: { user_id: 42 } }, parseUniquePolicy(unique)).key,
      );
      const second = await queue.add('welcome', { user_id: 42, template: 'b' }, { unique });
      expect(second.id).to.equal(first.id);
      expect(second.data).to.deep.equal({ user_id: 42, template: 'a' });
      expect(second.unique).to.include({ outcome: 'deduplicated', existingJobId: first.id, existingJobState: 'available' });
      expect(await queue.getJobCounts('wait')).to.deep.equal({ wait: 1 });
    });

    it('reject throws the core DuplicateJobError with the existing id and state; nothing is added', async function () {
      const queue = withUniqueness(ctx.queue('mail'));
      const first = await queue.add('report', {}, { unique: {}, delay: 60_000 });
      const error = await rejection(queue.add('report', {}, { unique: {} }));
      expect(error).to.be.instanceOf(DuplicateJobError);
      expect(error).to.include({ code: 'duplicate', existingJobId: first.id, existingJobState: 'scheduled', reason: 'duplicate' });
      expect(await queue.count()).to.equal(1);
    });

    it('replace cancels the old job: gone from BullMQ lists and counts, readable as OJS cancelled with replaced_by', async function () {
      const queue = withUniqueness(ctx.queue('mail'));
      const unique = { on_conflict: 'replace' } as const;
      const old = await queue.add('digest', { v: 1 }, { unique, priority: 5 });
      const replacement = await queue.add('digest', { v: 2 }, { unique });
      expect(replacement.id).to.not.equal(old.id);
      expect(replacement.unique?.outcome).to.equal('replaced');
      expect(replacedIds(replacement.unique)).to.deep.equal([old.id]);

      expect(await queue.getJob(old.id!)).to.equal(undefined);
      const counts = await queue.getJobCounts();
      expect(Object.values(counts).reduce((a, b) => a + b, 0)).to.equal(1);
      const listed = await queue.getJobs(['wait', 'prioritized', 'delayed', 'failed', 'completed', 'active']);
      expect(listed.map((job) => job.id)).to.deep.equal([replacement.id]);

      const backend = createBullMQBackend({ connection: ctx.redis, prefix: ctx.prefix });
      ctx.closeLater(backend);
      const cancelled = await backend.getJob(old.id!);
      expect(cancelled).to.include({ state: 'cancelled', replaced_by: replacement.id, type: 'digest' });
      expect(cancelled!.args).to.deep.equal({ v: 1 });
      // The outcome carries that view, as the backends' EnqueueResult does.
      expect(replacement.unique?.replaced).to.deep.equal(cancelled);
      expect(replacement.unique).not.to.have.property('also_replaced');
    });

    it('replace meeting an active job rejects with the §5.2 fallback and leaves both jobs alone', async function () {
      const queue = withUniqueness(ctx.queue('mail'));
      const running = await queue.add('resize', {}, { unique: { on_conflict: 'replace' } });
      const worker = new Worker('mail', null, { connection: ctx.redis, prefix: ctx.prefix, autorun: false });
      ctx.closeLater(worker);
      expect((await worker.getNextJob('token-1', { block: false }))?.id).to.equal(running.id);
      const error = await rejection(queue.add('resize', {}, { unique: { on_conflict: 'replace' } }));
      expect(error).to.include({
        code: 'duplicate',
        existingJobId: running.id,
        existingJobState: 'active',
        reason: 'active_not_replaceable',
      });
      expect(await queue.getJobCounts('active', 'wait')).to.deep.equal({ active: 1, wait: 0 });
    });

    it('created_at is Redis TIME, not the producer clock: a skewed producer timestamp neither anchors nor widens the period', async function () {
      const queue = withUniqueness(ctx.queue('mail'));
      const unique = { period: 'PT1H', on_conflict: 'ignore' } as const;
      const before = await redisTimeMs(ctx.redis);
      const job = await queue.add('ping', {}, { unique, timestamp: 1_000 });
      expect(job.timestamp).to.be.within(before, await redisTimeMs(ctx.redis));
      expect(Number(await ctx.redis.hget(`${ctx.prefix}:mail:${job.id}`, 'timestamp'))).to.equal(job.timestamp);
      // The same producer far in the past: had its clock anchored the job, the hour would be long over.
      expect((await queue.add('ping', {}, { unique, timestamp: 1_000 })).unique?.outcome).to.equal('deduplicated');
    });

    it("a unique job's hash stays in Redis' compact listpack encoding, like a plain job's: its policy is stored without defaults", async function () {
      const queue = withUniqueness(ctx.queue('mail'));
      const plain = await queue.add('x', { user_id: 1 });
      const unique = await queue.add('x', { user_id: 1 }, { unique: { keys: ['type', 'args'] } });
      const encoding = (id: string) => ctx.redis.object('ENCODING', `${ctx.prefix}:mail:${id}`);
      expect(await encoding(plain.id!)).to.equal('listpack');
      expect(await encoding(unique.id!)).to.equal('listpack');
      expect(await ctx.redis.hget(`${ctx.prefix}:mail:${unique.id}`, 'ojsPolicy')).to.equal('{"keys":["type","args"]}');
      const backend = createBullMQBackend({ connection: ctx.redis, prefix: ctx.prefix });
      ctx.closeLater(backend);
      expect((await backend.getJob(unique.id!))!.unique).to.deep.equal(parseUniquePolicy({ keys: ['type', 'args'] }));
    });

    it("a plain add through the wrapper is not checked: it is BullMQ's own add", async function () {
      const queue = withUniqueness(ctx.queue('mail'));
      await queue.add('x', {}, { unique: {} });
      const plain = await queue.add('x', {});
      expect(plain.unique).to.equal(undefined);
      expect(await queue.count()).to.equal(2);
    });

    it('the policy without the queue dimension spans queues under the prefix (§3.2)', async function () {
      const a = withUniqueness(ctx.queue('a'));
      const b = withUniqueness(ctx.queue('b'));
      const first = await a.add('sync', {}, { unique: { on_conflict: 'ignore' } });
      const second = await b.add('sync', {}, { unique: { on_conflict: 'ignore' } });
      expect(second.unique).to.include({ outcome: 'deduplicated', existingJobId: first.id });
      expect(second.queueName).to.equal('a');
      expect((await b.add('sync', {}, { unique: { keys: ['type', 'queue'], on_conflict: 'ignore' } })).unique?.outcome).to.equal('created');
      // A replace from b cancels the job in a, and says so on a's events stream.
      const replacement = await b.add('sync', {}, { unique: { on_conflict: 'replace' } });
      expect(replacedIds(replacement.unique)).to.deep.equal([first.id]);
      expect(await a.getJob(first.id!)).to.equal(undefined);
      const events = (await ctx.redis.call('XRANGE', `${ctx.prefix}:a:events`, '-', '+')) as [string, string[]][];
      expect(events.map(([, fields]) => fields.join(' ')).filter((line) => line.includes('ojs-replaced'))).to.have.length(1);
    });

    it('ojsMeta feeds the meta dimension and never touches data', async function () {
      const queue = withUniqueness(ctx.queue('mail'));
      const unique = { keys: ['type', 'meta'], meta_keys: ['tenant'], on_conflict: 'ignore' } as const;
      const acme = await queue.add('warm', { r: 1 }, { unique, ojsMeta: { tenant: 'acme', trace: 'x' } });
      expect(acme.data).to.deep.equal({ r: 1 });
      expect((await queue.add('warm', { r: 2 }, { unique, ojsMeta: { tenant: 'acme', trace: 'y' } })).unique?.outcome).to.equal(
        'deduplicated',
      );
      expect((await queue.add('warm', { r: 1 }, { unique, ojsMeta: { tenant: 'globex' } })).unique?.outcome).to.equal('created');
    });
  });

  describe('combining with BullMQ options', function () {
    it('refuses deduplication and repeat with unique, and a parent that does not exist, naming the option, writing nothing', async function () {
      const queue = withUniqueness(ctx.queue('mail'));
      for (const opts of [
        { deduplication: { id: 'd' } },
        { parent: { id: 'p', queue: `${ctx.prefix}:mail` } },
        { repeat: { every: 1000 } },
      ]) {
        const error = await rejection(queue.add('x', {}, { ...opts, unique: {} }));
        expect(error).to.be.instanceOf(InvalidJobInputError);
        expect((error as unknown as InvalidJobInputError).issues[0]!.path).to.equal(`opts.${Object.keys(opts)[0]}`);
      }
      // BullMQ's Queue writes its meta hash when it connects (a parent is checked by the script).
      expect((await ctx.redis.keys(`${ctx.prefix}:*`)).filter((key) => !key.endsWith(':meta'))).to.deep.equal([]);
    });

    it('jobId: the created job takes it; an existing id is refused (BullMQ alone would return the old job silently)', async function () {
      const queue = withUniqueness(ctx.queue('mail'));
      const job = await queue.add('a', {}, { jobId: 'order-1', unique: {} });
      expect(job.id).to.equal('order-1');
      const error = await rejection(queue.add('b', {}, { jobId: 'order-1', unique: {} }));
      expect(error).to.be.instanceOf(InvalidJobInputError);
      expect((error as unknown as InvalidJobInputError).issues[0]).to.include({ path: 'opts.jobId' });
      expect(error.message).to.contain('order-1');
    });

    it('removeOnComplete that would delete a job a "completed" policy depends on is refused; a long enough age is accepted', async function () {
      const queue = withUniqueness(ctx.queue('mail', { defaultJobOptions: { removeOnComplete: true } }));
      const states = ['available', 'active', 'completed'] as const;
      const refused = await rejection(queue.add('invoice', {}, { unique: { states, period: 'P1D' } }));
      expect(refused).to.be.instanceOf(InvalidJobInputError);
      expect((refused as unknown as InvalidJobInputError).issues[0]!.path).to.equal('opts.removeOnComplete');
      expect(
        await rejection(queue.add('invoice', {}, { unique: { states, period: 'P1D' }, removeOnComplete: { age: 3600 } })),
      ).to.be.instanceOf(InvalidJobInputError);
      const kept = await queue.add('invoice', {}, { unique: { states, period: 'P1D' }, removeOnComplete: { age: 86_400 } });
      expect(kept.unique?.outcome).to.equal('created');
      // The default states do not include completed: removeOnComplete is then the user's business.
      expect((await queue.add('other', {}, { unique: {} })).unique?.outcome).to.equal('created');
    });
  });

  describe("a Worker's removeOnComplete / removeOnFail", function () {
    it('cannot delete a job whose policy checks completed or discarded: the job stores its own keep option', async function () {
      const queue = withUniqueness(ctx.queue('mail'));
      const completed = { keys: ['type'], states: ['available', 'active', 'completed'] } as const;
      const discarded = { keys: ['type'], states: ['available', 'active', 'discarded'] } as const;
      const done = await queue.add('welcome', { user: 1 }, { unique: completed });
      const failed = await queue.add('charge', { user: 1 }, { unique: discarded, attempts: 1 });
      const plain = await queue.add('welcome', { user: 2 }, { unique: { keys: ['type', 'args'] } });
      expect(done.opts).to.include({ removeOnComplete: false });
      expect(failed.opts).to.include({ removeOnFail: false });
      expect(plain.opts).to.not.have.any.keys('removeOnComplete', 'removeOnFail');
      const finished = new Set<string>();
      const worker = new Worker(
        'mail',
        async (job) => {
          if (job.name === 'charge') throw new Error('declined');
          return 'ok';
        },
        { connection: ctx.connect(), prefix: ctx.prefix, removeOnComplete: { count: 0 }, removeOnFail: { count: 0 } },
      );
      ctx.closeLater(worker);
      worker.on('completed', (job) => finished.add(job.id!));
      worker.on('failed', (job) => finished.add(job!.id!));
      for (let i = 0; i < 200 && finished.size < 3; i++) await new Promise((resolve) => setTimeout(resolve, 25));
      expect(finished.size).to.equal(3);
      // The worker's { count: 0 } applied to the job without a keep option of its own …
      expect(await queue.getJob(plain.id!)).to.equal(undefined);
      // … but not to the jobs whose policies still count them.
      expect(await rejection(queue.add('welcome', { user: 1 }, { unique: completed }))).to.include({
        existingJobId: done.id,
        existingJobState: 'completed',
      });
      expect(await rejection(queue.add('charge', { user: 1 }, { unique: discarded }))).to.include({
        existingJobId: failed.id,
        existingJobState: 'discarded',
      });
    });
  });

  describe('addBulk', function () {
    it('per-job outcomes, duplicates within the batch handled in order, plain jobs untouched', async function () {
      const queue = withUniqueness(ctx.queue('mail'));
      const jobs = await queue.addBulk([
        { name: 'a', data: { n: 1 }, opts: { unique: { on_conflict: 'ignore' } } },
        { name: 'a', data: { n: 2 }, opts: { unique: { on_conflict: 'ignore' } } },
        { name: 'plain', data: {} },
        { name: 'a', data: { n: 3 }, opts: { unique: { on_conflict: 'reject' } } },
        { name: 'a', data: { n: 4 }, opts: { unique: { on_conflict: 'replace' } } },
      ]);
      const outcomes = jobs.map((job) => job.unique?.outcome ?? 'plain');
      expect(outcomes).to.deep.equal(['created', 'deduplicated', 'plain', 'rejected', 'replaced']);
      expect(jobs[1]!.id).to.equal(jobs[0]!.id);
      expect(jobs[3]!.unique!.error).to.be.instanceOf(DuplicateJobError);
      expect(jobs[3]!.unique!.existingJobId).to.equal(jobs[0]!.id);
      expect(replacedIds(jobs[4]!.unique)).to.deep.equal([jobs[0]!.id]);
      expect((await queue.getJobs(['wait'])).map((job) => job.name).sort()).to.deep.equal(['a', 'plain']);
    });

    it('a unique job whose jobId is taken (in the queue, or earlier in the batch) refuses the batch before anything is written', async function () {
      const queue = withUniqueness(ctx.queue('mail'));
      await queue.add('x', { a: 1 }, { jobId: 'taken' });
      const before = (await ctx.redis.keys(`${ctx.prefix}:*`)).sort();
      for (const batch of [
        [
          { name: 'a', data: { n: 1 }, opts: { unique: { keys: ['type'] } } },
          { name: 'b', data: { n: 2 }, opts: { unique: { keys: ['type'] }, jobId: 'taken' } },
          { name: 'c', data: { n: 3 }, opts: { unique: { keys: ['type'] } } },
        ],
        [
          { name: 'a', data: { n: 1 }, opts: { jobId: 'fresh' } },
          { name: 'b', data: { n: 2 }, opts: { unique: { keys: ['type'] }, jobId: 'fresh' } },
        ],
      ] satisfies { name: string; data: unknown; opts?: UniqueJobsOptions }[][]) {
        const error = await rejection(queue.addBulk(batch));
        expect(error).to.be.instanceOf(InvalidJobInputError);
        expect((error as unknown as InvalidJobInputError).issues[0]!.path).to.equal('[1].opts.jobId');
      }
      expect((await ctx.redis.keys(`${ctx.prefix}:*`)).sort()).to.deep.equal(before);
    });

    it('once the pipeline ran, an entry that was not added is reported on the entry, never thrown', async function () {
      const queue = withUniqueness(ctx.queue('mail'));
      // The id is taken between the up-front check and the pipeline: simulated by a pipeline hook.
      const client = await (queue.unwrapped as unknown as { backend: { client: Promise<{ pipeline(): { exec(): Promise<unknown> } }> } })
        .backend.client;
      const pipelineOf = client.pipeline.bind(client);
      let pipelines = 0;
      client.pipeline = () => {
        const pipeline = pipelineOf();
        // The first pipeline is the up-front id look-up; the second carries the adds.
        if (++pipelines !== 2) return pipeline;
        const exec = pipeline.exec.bind(pipeline);
        pipeline.exec = async () => {
          await queue.unwrapped.add('intruder', {}, { jobId: 'late' });
          return exec();
        };
        return pipeline;
      };
      try {
        const jobs = await queue.addBulk([
          { name: 'a', data: { n: 1 }, opts: { unique: { keys: ['type'] } } },
          { name: 'b', data: { n: 2 }, opts: { unique: { keys: ['type'] }, jobId: 'late' } },
          { name: 'c', data: { n: 3 }, opts: { unique: { keys: ['type'] } } },
        ]);
        expect(jobs.map((job) => job.unique?.outcome)).to.deep.equal(['created', 'rejected', 'created']);
        expect(jobs[1]!.unique!.error).to.be.instanceOf(InvalidJobInputError);
      } finally {
        client.pipeline = pipelineOf;
      }
      expect((await queue.getJobs(['wait'])).map((job) => job.name).sort()).to.deep.equal(['a', 'c', 'intruder']);
    });

    it('an invalid job refuses the whole batch before anything is written', async function () {
      const queue = withUniqueness(ctx.queue('mail'));
      const error = await rejection(
        queue.addBulk([
          { name: 'a', data: {}, opts: { unique: {} } },
          { name: 'b', data: {}, opts: { unique: { keys: ['argz'] } as never } },
        ]),
      );
      expect(error).to.be.instanceOf(InvalidJobInputError);
      expect(await ctx.redis.keys(`${ctx.prefix}:*`)).to.deep.equal([]);
    });
  });

  describe('events', function () {
    it('QueueEvents sees "deduplicated" for ignore and reject, and "removed" (reason ojs-replaced) for replace', async function () {
      const queue = withUniqueness(ctx.queue('mail'));
      const events = new QueueEvents('mail', { connection: ctx.connect(), prefix: ctx.prefix, autorun: true });
      ctx.closeLater(events);
      await events.waitUntilReady();
      const deduplicated: Record<string, string>[] = [];
      const removed: Record<string, string>[] = [];
      events.on('deduplicated', (args) => deduplicated.push(args as unknown as Record<string, string>));
      events.on('removed', (args) => removed.push(args as unknown as Record<string, string>));
      const first = await queue.add('a', {}, { unique: { on_conflict: 'ignore' } });
      await queue.add('a', {}, { jobId: 'incoming-2', unique: { on_conflict: 'ignore' } });
      await rejection(queue.add('a', {}, { unique: {} }));
      const replacement = await queue.add('a', {}, { unique: { on_conflict: 'replace' } });
      for (let i = 0; i < 100 && (deduplicated.length < 2 || removed.length < 1); i++) await new Promise((r) => setTimeout(r, 50));
      expect(deduplicated.map((e) => [e.jobId, e.deduplicatedJobId])).to.deep.equal([
        [first.id, 'incoming-2'],
        [first.id, ''],
      ]);
      expect(deduplicated[0]!.deduplicationId).to.equal(`ojs:${first.unique!.uniquenessKey}`);
      expect(removed).to.have.length(1);
      expect(removed[0]).to.include({ jobId: first.id, reason: 'ojs-replaced', replacedBy: replacement.id, prev: 'wait' });
    });
  });

  describe('the sidecar', function () {
    it('lives under the queue prefix with two or more extra segments and survives removeOrphanedJobs', async function () {
      const raw = ctx.queue('mail');
      const queue = withUniqueness(raw);
      await queue.add('a', {}, { unique: { keys: ['type', 'queue'], on_conflict: 'replace' } });
      await queue.add('a', {}, { unique: { keys: ['type', 'queue'], on_conflict: 'replace' } });
      const before = await ojsKeys(ctx);
      expect(before.map((key) => key.replace(/[0-9a-f]{64}/, '<key>'))).to.deep.equal([
        'mail:ojs:cancelled:1',
        'mail:ojs:index',
        'mail:ojs:layout',
        'ojs:global:queues',
      ]);
      await raw.removeOrphanedJobs();
      expect(await ojsKeys(ctx)).to.deep.equal(before);
      expect((await queue.add('a', {}, { unique: { keys: ['type', 'queue'], on_conflict: 'ignore' } })).unique?.outcome).to.equal(
        'deduplicated',
      );
    });

    it('obliterate leaves the sidecar; removeUniquenessIndex removes it (and the cross-queue part with global: true)', async function () {
      const raw = ctx.queue('mail');
      const queue = withUniqueness(raw);
      await queue.add('a', {}, { unique: { keys: ['type', 'queue'], states: INDEXED_STATES } });
      await queue.add('b', {}, { unique: {} });
      await raw.obliterate({ force: true });
      // Each index, its namespace's layout key, the queue set.
      expect(await ojsKeys(ctx)).to.have.length(5);
      expect(await removeUniquenessIndex(raw)).to.equal(2);
      expect(await removeUniquenessIndex(raw, { global: true })).to.equal(3);
      expect(await ctx.redis.keys(`${ctx.prefix}:*`)).to.deep.equal([]);
    });

    it('glob characters in a queue name match only that queue: removeUniquenessIndex and obliterate of `a*` leave `ab`', async function () {
      const star = withUniqueness(ctx.queue('a*'));
      const ab = withUniqueness(ctx.queue('ab'));
      const unique = { keys: ['type', 'queue'], on_conflict: 'replace' } as const;
      await ab.add('sync', { v: 1 }, { unique });
      const live = await ab.add('sync', { v: 2 }, { unique });
      await star.add('sync', {}, { unique });
      expect(await removeUniquenessIndex(ctx.queue('a*'))).to.equal(2); // its index and layout key
      await star.obliterate();
      const replaced = replacedIds(live.unique)[0];
      expect(await ojsKeys(ctx)).to.have.members(['ab:ojs:index', 'ab:ojs:layout', `ab:ojs:cancelled:${replaced}`, 'ojs:global:queues']);
      expect((await ab.add('sync', { v: 3 }, { unique: { keys: ['type', 'queue'], on_conflict: 'ignore' } })).unique).to.include({
        outcome: 'deduplicated',
        existingJobId: live.id,
      });
    });

    it('entries of gone jobs are reclaimed by the sweep of later inserts, without scanning', async function () {
      const queue = withUniqueness(ctx.queue('mail'));
      const unique = { keys: ['type', 'queue'], states: INDEXED_STATES } as const;
      const gone = await queue.add('old', {}, { unique });
      await gone.remove();
      expect(await entriesOf(ctx, 'mail:ojs:index', gone.unique!.uniquenessKey)).to.have.length(1);
      // The sweep draws fields at random: inserts go on until one has drawn it (a bounded number).
      let inserts = 0;
      while (inserts < 500 && (await entriesOf(ctx, 'mail:ojs:index', gone.unique!.uniquenessKey)).length > 0)
        await queue.add('new', { i: inserts++ }, { unique: { keys: ['type', 'queue', 'args'], states: INDEXED_STATES } });
      expect(await entriesOf(ctx, 'mail:ojs:index', gone.unique!.uniquenessKey)).to.deep.equal([]);
      expect(await ctx.redis.hlen(`${ctx.prefix}:mail:ojs:index`)).to.equal(inserts);
    });

    it('the index stays bounded when every key dies: 300 one-shot keys leave only a fraction', async function () {
      const queue = withUniqueness(ctx.queue('mail'));
      for (let i = 0; i < 300; i++) {
        const job = await queue.add('one-shot', { i }, { unique: { keys: ['type', 'queue', 'args'] } });
        await job.remove();
      }
      // Each insert sweeps drawn fields: dead ones settle at a fraction of the live ones (none here).
      expect(await ctx.redis.hlen(`${ctx.prefix}:mail:ojs:index`)).to.be.below(30);
    });

    it('with BullMQ default retention (completed jobs kept), the index stays proportional to live jobs', async function () {
      const raw = ctx.queue('mail');
      const queue = withUniqueness(raw);
      const unique = { keys: ['type', 'args'] } as const;
      const batch = 200;
      for (let i = 0; i < batch; i++) await queue.add('sync', { i }, { unique });
      const worker = new Worker('mail', async () => 'done', { connection: ctx.connect(), prefix: ctx.prefix, concurrency: 20 });
      ctx.closeLater(worker);
      while ((await raw.getCompletedCount()) < batch) await new Promise((resolve) => setTimeout(resolve, 50));
      await worker.close();
      // The completed jobs are kept by BullMQ; their entries are dead (the default policy does not count
      // `completed`) once the replay grace is over.
      expect(await raw.getCompletedCount()).to.equal(batch);
      await pastReplayGrace(ctx, 'mail', ...(await raw.getCompleted(0, -1)).map((job) => job.id!));
      const live = [];
      for (let i = batch; i < 2 * batch; i++) live.push(await queue.add('sync', { i }, { unique }));
      const fields = await ctx.redis.hlen(`${ctx.prefix}:ojs:global:index`);
      expect(fields).to.be.at.most(1.5 * batch);
      for (const job of live) expect(await entriesOf(ctx, 'ojs:global:index', job.unique!.uniquenessKey)).to.have.length(1);
      // A completed job is still found by a re-add of its key: as a finished job the policy does not count.
      expect((await queue.add('sync', { i: 0 }, { unique })).unique?.outcome).to.equal('created');
    });

    it("a failed job keeps its entry through the sweep: retried (job.retry, dashboards), it is still its key's job", async function () {
      const raw = ctx.queue('mail');
      const queue = withUniqueness(raw);
      const unique = { keys: ['type', 'queue'], states: INDEXED_STATES } as const;
      const failing = await queue.add('charge', {}, { unique });
      const worker = new Worker('mail', null, { connection: ctx.redis, prefix: ctx.prefix, autorun: false });
      ctx.closeLater(worker);
      const active = await worker.getNextJob('token', { block: false });
      await active!.moveToFailed(new Error('declined'), 'token', false);
      expect(await raw.getFailedCount()).to.equal(1);
      await pastReplayGrace(ctx, 'mail', failing.id!);
      for (let i = 0; i < 200; i++)
        await queue.add('other', { i }, { unique: { keys: ['type', 'queue', 'args'], states: INDEXED_STATES } });
      expect(await entriesOf(ctx, 'mail:ojs:index', failing.unique!.uniquenessKey)).to.have.length(1);
      await (await raw.getJob(failing.id!))!.retry('failed');
      const again = await queue.add('charge', {}, { unique: { ...unique, on_conflict: 'ignore' } });
      expect(again.unique).to.include({ outcome: 'deduplicated', existingJobId: failing.id, existingJobState: 'available' });
      expect((await raw.getWaiting()).filter((job) => job.name === 'charge')).to.have.length(1);
    });

    it('a key whose jobs keep failing keeps at most its newest failed jobs in its entries (each add of it reads them all)', async function () {
      const raw = ctx.queue('mail');
      const queue = withUniqueness(raw);
      const unique = { keys: ['type', 'queue'], states: INDEXED_STATES } as const;
      const worker = new Worker('mail', null, { connection: ctx.redis, prefix: ctx.prefix, autorun: false });
      ctx.closeLater(worker);
      let key = '';
      for (let i = 0; i < 20; i++) {
        const added = await queue.add('charge', { i }, { unique });
        key = added.unique!.uniquenessKey;
        const active = await worker.getNextJob('token', { block: false });
        await active!.moveToFailed(new Error('declined'), 'token', false);
      }
      expect(await raw.getFailedCount()).to.equal(20);
      await queue.add('charge', { last: true }, { unique });
      // The live job plus the newest failed ones (OJS_KEPT_FINISHED_MAX in includes/ojs-observe.lua).
      expect(await entriesOf(ctx, 'mail:ojs:index', key)).to.have.length(1 + 8);
    });

    it('§8.1 a re-sent add (lost reply) whose job already completed, with inserts between, returns its first outcome', async function () {
      const client = ctx.connect();
      const raw = new Queue('mail', { connection: client, prefix: ctx.prefix });
      ctx.closeLater(raw);
      const queue = withUniqueness(raw);
      await raw.waitUntilReady();
      // What ioredis would re-send after a reconnect: the same command, byte for byte.
      const sent: { name: string; args: unknown[] }[] = [];
      const send = client.sendCommand.bind(client);
      client.sendCommand = (command, stream) => {
        if (command.name.startsWith('eval') && command.args.some((arg) => String(arg).endsWith(':mail:ojs:index')))
          sent.push({ name: command.name, args: [...command.args] });
        return send(command, stream);
      };
      const first = await queue.add('receipt', {}, { unique: { keys: ['type', 'queue'], states: INDEXED_STATES } });
      client.sendCommand = send;
      const worker = new Worker('mail', null, { connection: ctx.redis, prefix: ctx.prefix, autorun: false });
      ctx.closeLater(worker);
      const active = await worker.getNextJob('token', { block: false });
      await active!.moveToCompleted('done', 'token', false);
      for (let i = 0; i < 200; i++)
        await queue.add('other', { i }, { unique: { keys: ['type', 'queue', 'args'], states: INDEXED_STATES } });
      const resend = sent.at(-1)!;
      const reply = (await client.call(resend.name, ...(resend.args as string[]))) as unknown[];
      expect(reply.slice(0, 2)).to.deep.equal(['created', first.id]);
      expect((await raw.getJobs(['waiting', 'completed'])).filter((job) => job.name === 'receipt')).to.have.length(1);
    });

    it('a steady workload (complete one, add one) keeps the index within 1.5x the live jobs', async function () {
      this.timeout(60_000); // many round trips: slow on a loaded machine, never a timing assertion
      const raw = ctx.queue('mail');
      const queue = withUniqueness(raw);
      const unique = { keys: ['type', 'queue', 'args'] } as const;
      const live = 100;
      for (let i = 0; i < live; i++) await queue.add('tick', { i }, { unique });
      const worker = new Worker('mail', null, { connection: ctx.redis, prefix: ctx.prefix, autorun: false });
      ctx.closeLater(worker);
      for (let i = live; i < live * 12; i++) {
        const job = await worker.getNextJob('token', { block: false });
        await job!.moveToCompleted('done', 'token', false);
        await pastReplayGrace(ctx, 'mail', job!.id!);
        await queue.add('tick', { i }, { unique });
      }
      expect(await raw.getWaitingCount()).to.equal(live);
      expect(await ctx.redis.hlen(`${ctx.prefix}:mail:ojs:index`)).to.be.at.most(1.5 * live);
    });

    it('the sweep never drops an entry a policy still counts: its own, or a later one that counted it', async function () {
      const raw = ctx.queue('mail');
      const queue = withUniqueness(raw);
      const counting = { keys: ['type', 'queue', 'args'], states: ['available', 'active', 'completed'] } as const;
      const narrow = { keys: ['type', 'queue', 'args'], states: INDEXED_STATES } as const;
      const kept = await queue.add('report', { n: 1 }, { unique: counting });
      const widened = await queue.add('report', { n: 2 }, { unique: narrow });
      const worker = new Worker('mail', async () => 'done', { connection: ctx.connect(), prefix: ctx.prefix });
      ctx.closeLater(worker);
      while ((await raw.getCompletedCount()) < 2) await new Promise((resolve) => setTimeout(resolve, 20));
      await worker.close();
      // A later policy counts the second one (completed, its own default policy does not): its entry is widened.
      expect(await rejection(queue.add('report', { n: 2 }, { unique: counting }))).to.include({ existingJobId: widened.id });
      expect((await entriesOf(ctx, 'mail:ojs:index', widened.unique!.uniquenessKey))[0]!.bits).to.equal(1);
      // Many inserts later (each sweeping drawn fields), both are still there and still block.
      for (let i = 0; i < 200; i++) await queue.add('filler', { i }, { unique: narrow });
      expect(await entriesOf(ctx, 'mail:ojs:index', kept.unique!.uniquenessKey)).to.have.length(1);
      expect(await entriesOf(ctx, 'mail:ojs:index', widened.unique!.uniquenessKey)).to.have.length(1);
      expect(await rejection(queue.add('report', { n: 1 }, { unique: counting }))).to.include({ existingJobId: kept.id });
      expect(await rejection(queue.add('report', { n: 2 }, { unique: counting }))).to.include({ existingJobId: widened.id });
    });

    it('an add whose period is over for a live job does not drop it: an add without a period still finds it', async function () {
      const queue = withUniqueness(ctx.queue('mail'));
      const live = await queue.add('sync', { v: 1 }, { unique: {} });
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      const second = await queue.add('sync', { v: 2 }, { unique: { period: 'PT1S' } });
      expect(second.unique?.outcome).to.equal('created');
      const error = await rejection(queue.add('sync', { v: 3 }, { unique: {} }));
      expect(error).to.include({ existingJobId: live.id });
    });

    it('an entry whose id now holds an unrelated job (removed, then reused by a plain add) no longer matches', async function () {
      const queue = withUniqueness(ctx.queue('reports'));
      const unique = { keys: ['type', 'args'] } as const;
      const first = await queue.add('build', { month: '2026-01' }, { unique, jobId: 'report-jan' });
      await first.remove();
      await queue.add('cleanup', { anything: true }, { jobId: 'report-jan' });
      const second = await queue.add('build', { month: '2026-01' }, { unique });
      expect(second.unique?.outcome).to.equal('created');
      const entries = await entriesOf(ctx, 'ojs:global:index', first.unique!.uniquenessKey);
      expect(entries.map((entry) => [entry.queue, entry.id])).to.deep.equal([['reports', second.id]]);
    });

    it('a job of another key sharing the 32-digit field is kept by an add of this key (a look, never a drop)', async function () {
      const queue = withUniqueness(ctx.queue('mail'), { duplicateProbe: false });
      const unique = { keys: ['type', 'queue', 'args'], states: INDEXED_STATES } as const;
      const a = await queue.add('sync', { n: 1 }, { unique });
      const b = await queue.add('sync', { n: 2 }, { unique });
      const fieldA = a.unique!.uniquenessKey.slice(0, 32);
      const fieldB = b.unique!.uniquenessKey.slice(0, 32);
      // Force the shared field: b's key gets a's first 32 digits, its entry moves into a's field.
      const sharedKey = fieldA + b.unique!.uniquenessKey.slice(32).replace(/./, (d) => (d === '0' ? '1' : '0'));
      await ctx.redis.hset(`${ctx.prefix}:mail:${b.id}`, 'ojsKey', sharedKey);
      await ctx.redis.eval(
        `local a = cmsgpack.unpack(redis.call('HGET', KEYS[1], ARGV[1]))
         for _, v in ipairs(cmsgpack.unpack(redis.call('HGET', KEYS[1], ARGV[2]))) do a[#a + 1] = v end
         redis.call('HSET', KEYS[1], ARGV[1], cmsgpack.pack(a))
         redis.call('HDEL', KEYS[1], ARGV[2])`,
        1,
        `${ctx.prefix}:mail:ojs:index`,
        fieldA,
        fieldB,
      );
      expect((await entriesOf(ctx, 'mail:ojs:index', a.unique!.uniquenessKey)).map((entry) => entry.id)).to.deep.equal([a.id, b.id]);
      expect(await rejection(queue.add('sync', { n: 1 }, { unique }))).to.include({ existingJobId: a.id });
      expect((await entriesOf(ctx, 'mail:ojs:index', a.unique!.uniquenessKey)).map((entry) => entry.id)).to.deep.equal([a.id, b.id]);
    });

    it('a later policy that counts a cancelled job longer than its own keeps its archive that long', async function () {
      const queue = withUniqueness(ctx.queue('mail'), { cancelledRetentionMs: 60_000 });
      // Cancelled by OJS CANCEL (a job a replace cancelled counts for no policy again).
      const backend = createBullMQBackend({ connection: ctx.redis, prefix: ctx.prefix, cancelledRetentionMs: 60_000 });
      ctx.closeLater(backend);
      const hourly = { states: ['available', 'cancelled'], period: 'PT1H' } as const;
      const forever = { states: ['available', 'cancelled'] } as const;
      for (const [name, later, expected] of [
        ['hourly', hourly, (ttl: number) => expect(ttl).to.be.above(60_000)],
        ['forever', forever, (ttl: number) => expect(ttl).to.equal(-1)],
      ] as const) {
        const old = await queue.add(name, {}, { unique: {} });
        await backend.cancel(old.id!);
        const archive = `${ctx.prefix}:mail:ojs:cancelled:${old.id}`;
        expect(await ctx.redis.pttl(archive)).to.be.within(1, 60_000);
        expect(await rejection(queue.add(name, {}, { unique: later }))).to.include({ existingJobId: old.id });
        expected(await ctx.redis.pttl(archive));
      }
    });

    it('a finished entry is dropped only when neither its own policy nor the adding one counts it', async function () {
      const queue = withUniqueness(ctx.queue('mail'));
      const worker = new Worker('mail', null, { connection: ctx.redis, prefix: ctx.prefix, autorun: false });
      ctx.closeLater(worker);
      const complete = async (id: string) => {
        const job = await worker.getNextJob(`token-${id}`, { block: false });
        expect(job?.id).to.equal(id);
        await job!.moveToCompleted('done', `token-${id}`, false);
      };
      const narrow = await queue.add('welcome', {}, { unique: { keys: ['type'] } });
      await complete(narrow.id!);
      await pastReplayGrace(ctx, 'mail', narrow.id!);
      const listed = async () =>
        (await entriesOf(ctx, 'ojs:global:index', narrow.unique!.uniquenessKey)).map((entry) => `${entry.queue}:${entry.id}`);
      // The adding policy counts the completed job: it stays, and blocks.
      const wide = { keys: ['type'], states: ['available', 'active', 'completed'] } as const;
      expect(await rejection(queue.add('welcome', {}, { unique: wide }))).to.include({
        existingJobId: narrow.id,
        existingJobState: 'completed',
      });
      expect(await listed()).to.deep.equal([`mail:${narrow.id}`]);
      // Neither its own policy (default states) nor this one counts it, nor one that counted it (widened:
      // it counts `completed` without a period now): kept.
      const next = await queue.add('welcome', {}, { unique: { keys: ['type'], period: 'PT1H' } });
      expect(next.unique?.outcome).to.equal('created');
      expect(await listed()).to.deep.equal([`mail:${narrow.id}`, `mail:${next.id}`]);
    });

    it('a finished entry no policy counts any more is dropped by the next add of its key', async function () {
      const queue = withUniqueness(ctx.queue('mail'));
      const worker = new Worker('mail', null, { connection: ctx.redis, prefix: ctx.prefix, autorun: false });
      ctx.closeLater(worker);
      const first = await queue.add('welcome', {}, { unique: { keys: ['type'] } });
      const job = await worker.getNextJob('token', { block: false });
      await job!.moveToCompleted('done', 'token', false);
      await pastReplayGrace(ctx, 'mail', first.id!);
      const next = await queue.add('welcome', {}, { unique: { keys: ['type'] } });
      const entries = await entriesOf(ctx, 'ojs:global:index', first.unique!.uniquenessKey);
      expect(entries.map((entry) => `${entry.queue}:${entry.id}`)).to.deep.equal([`mail:${next.id}`]);
    });

    it("the index entry holds the insert's Redis TIME in microseconds (insertion order within a millisecond)", async function () {
      const queue = withUniqueness(ctx.queue('mail'));
      const job = await queue.add('a', {}, { unique: { keys: ['type', 'queue'], states: INDEXED_STATES } });
      const [entry] = await entriesOf(ctx, 'mail:ojs:index', job.unique!.uniquenessKey);
      expect(entry).to.include({ queue: '', id: job.id, bits: 0, periodEnd: 0 });
      expect(Math.floor(entry!.us / 1000)).to.equal(job.timestamp);
      expect(entry!.us % 1).to.equal(0);
    });

    it('a gone job (removed) no longer blocks, as with BullMQ jobIds', async function () {
      const queue = withUniqueness(ctx.queue('mail'));
      const first = await queue.add('a', {}, { unique: {} });
      await first.remove();
      expect((await queue.add('a', {}, { unique: {} })).unique?.outcome).to.equal('created');
    });
  });

  it('a unique add or addBulk that fails in Redis throws BackendError (the cause kept), never a raw error', async function () {
    const connection = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
    const raw = new Queue('mail', { connection, prefix: ctx.prefix });
    raw.on('error', () => {}); // the closed connection's own error events: not what is tested
    const queue = withUniqueness(raw);
    await queue.add('warm', {}, { unique: {} });
    await connection.quit();
    for (const attempt of [queue.add('t', {}, { unique: {} }), queue.addBulk([{ name: 't', data: {}, opts: { unique: {} } }])]) {
      const error = await rejection(attempt);
      expect(error).to.be.instanceOf(BackendError);
      expect(error).to.include({ code: 'backend_error' });
      expect((error as { cause?: unknown }).cause).to.be.instanceOf(Error);
    }
  });

  it('the generated Lua module is up to date (scripts/build-lua.mjs --check)', function () {
    execFileSync(process.execPath, ['scripts/build-lua.mjs', '--check'], { stdio: 'pipe' });
  });

  it("refuses a queue that is not backed by BullMQ's Redis backend, at wrap time", function () {
    const fake = { name: 'x', backend: {} } as unknown as Parameters<typeof withUniqueness>[0];
    expect(() => withUniqueness(fake)).to.throw(/RedisQueueBackend/);
  });
});
