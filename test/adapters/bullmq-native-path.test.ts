/**
 * The native path (lua/includes/ojs-native-add.lua, bullmq-native-path.ts): the policies BullMQ's
 * own deduplication key answers go through it and BullMQ's own cleanup, and both paths see each
 * other's jobs of one key. Real Redis, real BullMQ workers where a job must finish.
 */
import { expect } from 'chai';
import { Worker, type Job } from 'bullmq';
import { createBullMQBackend, withUniqueness } from '../../adapters/bullmq/index.js';
import { DuplicateJobError, parseUniquePolicy } from '../../src/index.js';
import { nativePathServes } from '../../adapters/bullmq/bullmq-native-path.js';
import { rejection } from '../conformance/suite-context.js';
import { indexEntries, useRedisPrefix } from './bullmq-test-redis.js';
import { replacedIds } from '../replaced-ids.js';

const FILE = 'bullmq-native-path.test.ts';
const NATIVE = { keys: ['type', 'queue'] } as const;

describe('bullmq adapter: the native path (BullMQ deduplication key)', function () {
  this.timeout(20_000);
  const ctx = useRedisPrefix(FILE);

  const dedupKey = (queue: string, uniquenessKey: string) => `${ctx.prefix}:${queue}:de:${uniquenessKey.slice(0, 32)}`;
  const indexOf = (queue: string, uniquenessKey: string) => indexEntries(ctx.redis, `${ctx.prefix}:${queue}:ojs:index`, uniquenessKey);

  /** Runs the queue's next job to completion (or failure) with BullMQ's own worker calls. */
  async function finishNext(queue: string, fail = false): Promise<Job> {
    const worker = new Worker(queue, null, { connection: ctx.connect(), prefix: ctx.prefix, autorun: false });
    ctx.closeLater(worker);
    const job = (await worker.getNextJob('token', { block: false }))!;
    if (fail) await job.moveToFailed(new Error('fails'), 'token', false);
    else await job.moveToCompleted('done', 'token', false);
    await worker.close();
    return job;
  }

  it('which policies take it: `queue` in the key, the default states, reject or ignore, nothing else', function () {
    const serves = (input: object, lone = true) => nativePathServes(parseUniquePolicy(input), lone);
    expect(serves(NATIVE)).to.equal(true);
    expect(serves({ ...NATIVE, on_conflict: 'ignore' })).to.equal(true);
    expect(serves({ keys: ['type', 'queue', 'args'], args_keys: ['id'] })).to.equal(true);
    expect(serves({ ...NATIVE, states: ['pending', 'retryable', 'active', 'scheduled', 'available'] })).to.equal(true);
    expect(serves(NATIVE, false), 'a flow node, or an id claimed across queues').to.equal(false);
    expect(serves({ keys: ['type'] }), 'across queues').to.equal(false);
    expect(serves({ ...NATIVE, on_conflict: 'replace' })).to.equal(false);
    expect(serves({ ...NATIVE, period: 'PT1H' })).to.equal(false);
    expect(serves({ ...NATIVE, states: ['available', 'active', 'scheduled', 'retryable'] })).to.equal(false);
    expect(serves({ ...NATIVE, states: ['available', 'active', 'scheduled', 'retryable', 'pending', 'completed'] })).to.equal(false);
    expect(serves({ ...NATIVE, x_update: { scheduled: ['args'] } })).to.equal(false);
  });

  it("§5 an insert sets BullMQ's deduplication key and the job's deid, and writes no index entry; a duplicate is answered from it", async function () {
    const queue = withUniqueness(ctx.queue('mail'));
    const first = await queue.add('sync', { v: 1 }, { unique: NATIVE });
    const key = first.unique!.uniquenessKey;
    expect(await ctx.redis.get(dedupKey('mail', key))).to.equal(first.id);
    expect(await ctx.redis.hget(`${ctx.prefix}:mail:${first.id}`, 'deid')).to.equal(key.slice(0, 32));
    expect(await ctx.redis.exists(`${ctx.prefix}:mail:ojs:index`)).to.equal(0);
    expect((await queue.getJob(first.id!))!.deduplicationId).to.equal(key.slice(0, 32));
    expect(first.deduplicationId).to.equal(key.slice(0, 32));

    const error = await rejection(queue.add('sync', { v: 2 }, { unique: NATIVE }));
    expect(error).to.be.instanceOf(DuplicateJobError);
    expect(error).to.include({ existingJobId: first.id, existingJobState: 'available' });
    const ignored = await queue.add('sync', { v: 3 }, { unique: { ...NATIVE, on_conflict: 'ignore' } });
    expect(ignored.id).to.equal(first.id);
    expect(ignored.data).to.deep.equal({ v: 1 });
    expect(ignored.unique).to.include({ outcome: 'deduplicated', existingJobId: first.id });
    expect(await queue.count()).to.equal(1);
  });

  for (const [how, end] of [
    ['completes', (queue: string) => finishNext(queue)],
    ['fails for good', (queue: string) => finishNext(queue, true)],
  ] as const) {
    it(`§6.1 a job that ${how} no longer holds the key: BullMQ deleted its deduplication key`, async function () {
      const queue = withUniqueness(ctx.queue('mail'));
      const first = await queue.add('sync', {}, { unique: NATIVE });
      await end('mail');
      expect(await ctx.redis.exists(dedupKey('mail', first.unique!.uniquenessKey))).to.equal(0);
      const again = await queue.add('sync', {}, { unique: NATIVE });
      expect(again.unique).to.include({ outcome: 'created' });
      expect(again.id).to.not.equal(first.id);
    });
  }

  it('a removed job no longer holds the key; neither does a released one, nor one OJS-cancelled', async function () {
    const queue = withUniqueness(ctx.queue('mail'));
    const removed = await queue.add('a', {}, { unique: NATIVE });
    await removed.remove();
    expect((await queue.add('a', {}, { unique: NATIVE })).unique).to.include({ outcome: 'created' });

    const released = await queue.add('b', {}, { unique: NATIVE });
    expect(await queue.releaseUniqueKey('b', {}, { unique: NATIVE })).to.equal(1);
    expect(await ctx.redis.exists(dedupKey('mail', released.unique!.uniquenessKey))).to.equal(0);
    expect((await queue.add('b', {}, { unique: NATIVE })).unique).to.include({ outcome: 'created' });

    const backend = createBullMQBackend({ connection: ctx.redis, prefix: ctx.prefix });
    ctx.closeLater(backend);
    const cancelled = await queue.add('c', {}, { unique: NATIVE });
    await backend.cancel(cancelled.id!);
    expect(await ctx.redis.exists(dedupKey('mail', cancelled.unique!.uniquenessKey))).to.equal(0);
    expect((await queue.add('c', {}, { unique: NATIVE })).unique).to.include({ outcome: 'created' });
  });

  it('a stale deduplication key (its job gone without BullMQ deleting it) is overwritten by the next insert', async function () {
    const queue = withUniqueness(ctx.queue('mail'));
    const first = await queue.add('sync', {}, { unique: NATIVE });
    await ctx.redis.del(`${ctx.prefix}:mail:${first.id}`);
    const again = await queue.add('sync', {}, { unique: NATIVE });
    expect(again.unique).to.include({ outcome: 'created' });
    expect(await ctx.redis.get(dedupKey('mail', again.unique!.uniquenessKey))).to.equal(again.id);
  });

  describe('both paths see the jobs of one key', function () {
    it('§5.3 a general replace cancels the native job and takes the key; a native add then meets the new job', async function () {
      const queue = withUniqueness(ctx.queue('mail'));
      const native = await queue.add('sync', { v: 1 }, { unique: NATIVE });
      const replacing = await queue.add('sync', { v: 2 }, { unique: { ...NATIVE, on_conflict: 'replace' } });
      expect(replacing.unique?.outcome).to.equal('replaced');
      expect(replacedIds(replacing.unique)).to.deep.equal([native.id]);
      expect(await ctx.redis.exists(dedupKey('mail', native.unique!.uniquenessKey))).to.equal(0);
      expect(await rejection(queue.add('sync', { v: 3 }, { unique: NATIVE }))).to.include({ existingJobId: replacing.id });
    });

    it('§6 a general job of the key (its index entry) is a duplicate for a native add, and a native job for a general add', async function () {
      const queue = withUniqueness(ctx.queue('mail'));
      const general = await queue.add('a', {}, { unique: { ...NATIVE, states: ['available', 'active', 'scheduled', 'retryable'] } });
      expect(await rejection(queue.add('a', {}, { unique: NATIVE }))).to.include({ existingJobId: general.id });

      const native = await queue.add('b', {}, { unique: NATIVE });
      const counting = { ...NATIVE, states: ['available', 'completed'] } as const;
      expect(await rejection(queue.add('b', {}, { unique: counting }))).to.include({ existingJobId: native.id });
    });

    it('§5 the oldest duplicate is named whichever path inserted it, once the key has jobs of both', async function () {
      const queue = withUniqueness(ctx.queue('mail'));
      const native = await queue.add('a', {}, { unique: NATIVE });
      // Counts only completed jobs: the live native job is no duplicate for it, so it inserts.
      const general = await queue.add('a', {}, { unique: { ...NATIVE, states: ['completed'] } });
      expect(general.unique).to.include({ outcome: 'created' });
      expect((await indexOf('mail', native.unique!.uniquenessKey)).map((entry) => entry.id)).to.deep.equal([native.id, general.id]);
      expect(await rejection(queue.add('a', {}, { unique: NATIVE }))).to.include({ existingJobId: native.id });
      await finishNext('mail');
      expect(await rejection(queue.add('a', {}, { unique: NATIVE }))).to.include({ existingJobId: general.id });
    });

    it('docs/bullmq.md "Two paths": a finished native job counts for no later policy, even one that counts its state', async function () {
      const queue = withUniqueness(ctx.queue('mail'));
      await queue.add('a', {}, { unique: NATIVE });
      await finishNext('mail');
      const counting = await queue.add('a', {}, { unique: { ...NATIVE, states: ['available', 'completed'] } });
      expect(counting.unique).to.include({ outcome: 'created' });
    });
  });

  it('§8.1 addBulk: native and general adds of one key in one call answer in order', async function () {
    const queue = withUniqueness(ctx.queue('mail'));
    const jobs = await queue.addBulk([
      { name: 'a', data: { n: 1 }, opts: { unique: NATIVE } },
      { name: 'a', data: { n: 2 }, opts: { unique: { ...NATIVE, on_conflict: 'ignore' } } },
      { name: 'a', data: { n: 3 }, opts: { unique: { ...NATIVE, on_conflict: 'replace' } } },
      { name: 'a', data: { n: 4 }, opts: { unique: { ...NATIVE, on_conflict: 'ignore' } } },
    ]);
    expect(jobs.map((job) => job.unique?.outcome)).to.deep.equal(['created', 'deduplicated', 'replaced', 'deduplicated']);
    expect(jobs[3]!.id).to.equal(jobs[2]!.id);
  });
});
