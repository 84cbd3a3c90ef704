/**
 * The native path (BullMQ's deduplication key) beside the rest of the adapter and BullMQ's own
 * maintenance calls: the general path's x_update and replace_except_schedule meeting a native
 * job, flows, drain / clean / obliterate, lookups, a job retried by hand, the duplicate probe.
 * From an independent review of the native path. Real Redis.
 */
import { expect } from 'chai';
import { Queue, Worker, type Job } from 'bullmq';
import { withUniqueness } from '../../adapters/bullmq/index.js';
import { rejection } from '../conformance/suite-context.js';
import { indexEntries, useRedisPrefix } from './bullmq-test-redis.js';
import { replacedIds } from '../replaced-ids.js';

const FILE = 'bullmq-native-path-interplay.test.ts';
const NATIVE = { keys: ['type', 'queue'] } as const;

describe('bullmq adapter: the native path beside the rest of the adapter', function () {
  this.timeout(20_000);
  const ctx = useRedisPrefix(FILE);
  const dedupKey = (queue: string, uniquenessKey: string) => `${ctx.prefix}:${queue}:de:${uniquenessKey.slice(0, 32)}`;

  async function takeNext(queue: string): Promise<{ job: Job; worker: Worker }> {
    const worker = new Worker(queue, null, { connection: ctx.connect(), prefix: ctx.prefix, autorun: false });
    ctx.closeLater(worker);
    const job = (await worker.getNextJob('token', { block: false }))!;
    return { job, worker };
  }

  it('x_update general add meets a scheduled native holder: updated in place, native still sees it', async function () {
    const queue = withUniqueness(ctx.queue('mail'));
    const native = await queue.add('a', { v: 1 }, { unique: NATIVE, delay: 60_000 });
    const updated = await queue.add('a', { v: 2 }, { unique: { ...NATIVE, x_update: { scheduled: ['args'] } } as never, delay: 60_000 });
    expect(updated.unique).to.include({ outcome: 'updated' });
    expect(updated.id).to.equal(native.id);
    expect(await rejection(queue.add('a', {}, { unique: NATIVE }))).to.include({ existingJobId: native.id, existingJobState: 'scheduled' });
  });

  it('replace_except_schedule meets a scheduled native holder: replaced, dedup key gone, new job holds', async function () {
    const queue = withUniqueness(ctx.queue('mail'));
    const native = await queue.add('a', { v: 1 }, { unique: NATIVE, delay: 60_000 });
    const replaced = await queue.add('a', { v: 2 }, { unique: { ...NATIVE, on_conflict: 'replace_except_schedule' } });
    expect(replaced.unique?.outcome).to.equal('replaced');
    expect(replacedIds(replaced.unique)).to.deep.equal([native.id]);
    expect(await ctx.redis.exists(dedupKey('mail', native.unique!.uniquenessKey))).to.equal(0);
    expect(await rejection(queue.add('a', {}, { unique: NATIVE }))).to.include({
      existingJobId: replaced.id,
      existingJobState: 'scheduled',
    });
  });

  it('a native holder moved to waiting-children is pending and still holds the key', async function () {
    const plain = ctx.queue('mail');
    const queue = withUniqueness(plain);
    const native = await queue.add('a', {}, { unique: NATIVE });
    const { job } = await takeNext('mail');
    expect(job.id).to.equal(native.id);
    const child = new Queue('kids', { connection: ctx.redis, prefix: ctx.prefix });
    ctx.closeLater(child);
    await child.add('k', {}, { parent: { id: job.id!, queue: job.queueQualifiedName } });
    expect(await job.moveToWaitingChildren('token')).to.equal(true);
    expect(await rejection(queue.add('a', {}, { unique: NATIVE }))).to.include({ existingJobId: native.id, existingJobState: 'pending' });
    expect(await rejection(queue.add('a', {}, { unique: { ...NATIVE, states: ['pending', 'completed'] } }))).to.include({
      existingJobId: native.id,
      existingJobState: 'pending',
    });
  });

  it('drain and clean delete the dedup key with the job', async function () {
    const plain = ctx.queue('mail');
    const queue = withUniqueness(plain);
    const a = await queue.add('a', {}, { unique: NATIVE });
    await plain.drain(true);
    expect(await ctx.redis.exists(dedupKey('mail', a.unique!.uniquenessKey))).to.equal(0);
    expect((await queue.add('a', {}, { unique: NATIVE })).unique).to.include({ outcome: 'created' });
    await plain.clean(0, 100, 'wait');
    expect((await queue.add('a', {}, { unique: NATIVE })).unique).to.include({ outcome: 'created' });
  });

  it('wrapped obliterate: no dedup key survives; the next add after the counter reset is created', async function () {
    const plain = ctx.queue('mail');
    const queue = withUniqueness(plain);
    const a = await queue.add('a', {}, { unique: NATIVE });
    await queue.add('b', {}, { unique: NATIVE, delay: 10_000 });
    await plain.pause();
    await queue.obliterate();
    const left = await ctx.redis.keys(`${ctx.prefix}:mail:*`);
    expect(left.filter((key) => key.includes(':de:'))).to.deep.equal([]);
    const again = await queue.add('a', {}, { unique: NATIVE });
    expect(again.unique).to.include({ outcome: 'created' });
    expect(again.id).to.equal(a.id);
  });

  it('findUniqueJob finds a native holder by policy and by key; releaseUniqueKey by key drops its dedup key', async function () {
    const queue = withUniqueness(ctx.queue('mail'));
    const native = await queue.add('a', {}, { unique: NATIVE });
    expect((await queue.findUniqueJob('a', {}, { unique: NATIVE }))?.id).to.equal(native.id);
    expect((await queue.findUniqueJob({ uniqueness_key: native.unique!.uniquenessKey }))?.id).to.equal(native.id);
    expect(await queue.releaseUniqueKey({ uniqueness_key: native.unique!.uniquenessKey })).to.equal(1);
    expect(await ctx.redis.exists(dedupKey('mail', native.unique!.uniquenessKey))).to.equal(0);
  });

  it('job.retry() of a completed native job, then a new native add: the retried job finishing does not drop the new holder', async function () {
    const queue = withUniqueness(ctx.queue('mail'));
    const first = await queue.add('a', {}, { unique: NATIVE });
    const { job, worker } = await takeNext('mail');
    await job.moveToCompleted('done', 'token', false);
    await job.retry('completed');
    const second = await queue.add('a', {}, { unique: NATIVE });
    // Documented for failed jobs; the same holds for completed ones.
    expect(second.unique).to.include({ outcome: 'created' });
    const retried = (await worker.getNextJob('token2', { block: false }))!;
    expect(retried.id).to.equal(first.id);
    await retried.moveToCompleted('done', 'token2', false);
    expect(await ctx.redis.get(dedupKey('mail', first.unique!.uniquenessKey))).to.equal(second.id);
    expect(await rejection(queue.add('a', {}, { unique: NATIVE }))).to.include({ existingJobId: second.id });
  });

  it('probe hint: a duplicate, then the holder completes, then an add within the hint TTL is created', async function () {
    const queue = withUniqueness(ctx.queue('mail'));
    const first = await queue.add('a', {}, { unique: NATIVE });
    await rejection(queue.add('a', {}, { unique: NATIVE }));
    const { job } = await takeNext('mail');
    await job.moveToCompleted('done', 'token', false);
    const again = await queue.add('a', {}, { unique: NATIVE });
    expect(again.unique).to.include({ outcome: 'created' });
    expect(again.id).to.not.equal(first.id);
  });

  it('a general reject meeting a native holder does not write the field, so the native path keeps serving', async function () {
    const queue = withUniqueness(ctx.queue('mail'));
    const native = await queue.add('a', {}, { unique: NATIVE });
    await rejection(queue.add('a', {}, { unique: { ...NATIVE, states: ['available', 'completed'] } }));
    expect(await indexEntries(ctx.redis, `${ctx.prefix}:mail:ojs:index`, native.unique!.uniquenessKey)).to.deep.equal([]);
    expect(await ctx.redis.get(dedupKey('mail', native.unique!.uniquenessKey))).to.equal(native.id);
  });
});
