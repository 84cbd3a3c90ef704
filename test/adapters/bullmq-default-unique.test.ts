/**
 * `defaultJobOptions.unique`: a queue's default policy, applied by `withUniqueness(queue)` to every
 * add that does not say `unique`; a policy of its own replaces it, `unique: null` opts out. Real Redis.
 */
import { expect } from 'chai';
import { withUniqueness, type UniqueJob, type UniqueQueueOptions } from '../../adapters/bullmq/index.js';
import { DuplicateJobError } from '../../src/index.js';
import { rejection } from '../conformance/suite-context.js';
import { useRedisPrefix } from './bullmq-test-redis.js';

const FILE = 'bullmq-default-unique.test.ts';

describe('bullmq adapter: defaultJobOptions.unique', function () {
  this.timeout(20_000);
  const ctx = useRedisPrefix(FILE);
  const defaults = (): Partial<UniqueQueueOptions> => ({
    defaultJobOptions: { attempts: 2, unique: { keys: ['type', 'queue'], on_conflict: 'ignore' } },
  });

  it('an add without unique gets the default policy; addBulk too', async () => {
    const queue = withUniqueness(ctx.queue('mail', defaults()));
    // The types cannot see the queue's default: an add without `unique` is typed as a plain one.
    const first = (await queue.add('f', { n: 1 })) as unknown as UniqueJob;
    expect(first.unique?.outcome).to.equal('created');
    expect(first.opts).to.include({ attempts: 2 });
    expect(first.opts).to.not.have.property('unique');
    const second = (await queue.add('f', { n: 2 })) as unknown as UniqueJob;
    expect(second.unique).to.include({ outcome: 'deduplicated', existingJobId: first.id });
    const [bulk] = await queue.addBulk([{ name: 'f', data: { n: 3 } }]);
    expect(bulk!.unique).to.include({ outcome: 'deduplicated', existingJobId: first.id });
    expect((await queue.findUniqueJob('f', {}))?.id).to.equal(first.id);
    expect(await queue.getJobCounts('wait')).to.deep.equal({ wait: 1 });
    const stored = await ctx.redis.hget(`${ctx.prefix}:mail:${first.id}`, 'opts');
    expect(stored).to.not.include('unique');
  });

  it('a policy of its own replaces the default wholly', async () => {
    const queue = withUniqueness(ctx.queue('mail', defaults()));
    await queue.add('f', {});
    const error = await rejection(queue.add('f', {}, { unique: { keys: ['type', 'queue'] } }));
    expect(error).to.be.instanceOf(DuplicateJobError);
    const other = await queue.add('f', { n: 1 }, { unique: { keys: ['type', 'args'], on_conflict: 'ignore' } });
    expect(other.unique.outcome).to.equal('created');
  });

  it('unique: null opts out: a plain BullMQ add, the default not stored on the job', async () => {
    const queue = withUniqueness(ctx.queue('mail', defaults()));
    await queue.add('f', {});
    const plain = await queue.add('f', {}, { unique: null });
    expect(plain.unique).to.equal(undefined);
    const [bulk] = await queue.addBulk([{ name: 'f', data: {}, opts: { unique: null } }]);
    expect(bulk!.unique).to.equal(undefined);
    // In a batch with unique entries, the opted-out entry is still plain.
    const [mixedPlain, mixedUnique] = await queue.addBulk([
      { name: 'f', data: {}, opts: { unique: null } },
      { name: 'f', data: {} },
    ]);
    expect(mixedPlain!.unique).to.equal(undefined);
    expect((mixedUnique as unknown as UniqueJob).unique.outcome).to.equal('deduplicated');
    expect(await queue.getJobCounts('wait')).to.deep.equal({ wait: 4 });
    for (const job of [plain, bulk!, mixedPlain!]) {
      const hash = await ctx.redis.hgetall(`${ctx.prefix}:mail:${job.id}`);
      expect(hash.opts).to.not.include('unique');
      expect(Object.keys(hash).filter((field) => field.startsWith('ojs'))).to.deep.equal([]);
    }
  });
});
