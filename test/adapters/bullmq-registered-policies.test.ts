/**
 * `withUniqueness(queue, { policies })`: a policy registered per job name applies to every add of
 * that name through the wrapper (add, addBulk, flows, scheduler templates, explain), an add
 * without options included; an add naming another policy (or none) is refused. Real Redis.
 */
import { expect } from 'chai';
import { FlowProducer } from 'bullmq';
import { withUniqueness, type UniqueJob, type UniqueQueueOptions } from '../../adapters/bullmq/index.js';
import { InvalidJobInputError } from '../../src/index.js';
import { rejection } from '../conformance/suite-context.js';
import { useRedisPrefix } from './bullmq-test-redis.js';

const FILE = 'bullmq-registered-policies.test.ts';
const daily = { keys: ['type', 'queue'], on_conflict: 'ignore' } as const;

describe('bullmq adapter: policies registered per job name', function () {
  this.timeout(20_000);
  const ctx = useRedisPrefix(FILE);

  it('an add of a registered name without options gets its policy; other names stay plain', async () => {
    const queue = withUniqueness(ctx.queue('reports'), { policies: { 'report.build': daily } });
    const first = (await queue.add('report.build', { day: 1 })) as unknown as UniqueJob;
    const second = (await queue.add('report.build', { day: 2 })) as unknown as UniqueJob;
    expect(first.unique.outcome).to.equal('created');
    expect(second.unique).to.include({ outcome: 'deduplicated', existingJobId: first.id });
    const other = await queue.add('report.mail', { day: 1 });
    expect(other.unique).to.equal(undefined);
    const [bulk, plainBulk] = await queue.addBulk([
      { name: 'report.build', data: {} },
      { name: 'report.mail', data: {} },
    ]);
    expect(bulk!.unique).to.include({ outcome: 'deduplicated', existingJobId: first.id });
    expect(plainBulk!.unique).to.equal(undefined);
    expect(await queue.getJobCounts('wait')).to.deep.equal({ wait: 3 });
    const explained = await queue.explainUnique('report.build', {});
    expect(explained.outcome).to.equal('deduplicated');
    expect((await queue.findUniqueJob('report.build', {}))?.id).to.equal(first.id);
  });

  it('wins over the queue default, and an add naming another policy or none is refused, nothing written', async () => {
    const defaults: Partial<UniqueQueueOptions> = { defaultJobOptions: { unique: { keys: ['type', 'args'], on_conflict: 'ignore' } } };
    const queue = withUniqueness(ctx.queue('reports', defaults), { policies: { 'report.build': daily } });
    await queue.add('report.build', { day: 1 });
    // The default would have let another day in; the registered policy does not.
    const again = (await queue.add('report.build', { day: 2 })) as unknown as UniqueJob;
    expect(again.unique.outcome).to.equal('deduplicated');
    for (const unique of [null, { keys: ['type'] } as const]) {
      const error = await rejection(queue.add('report.build', { day: 3 }, { unique }));
      expect(error).to.be.instanceOf(InvalidJobInputError);
      expect((error as unknown as InvalidJobInputError).issues[0]!.path).to.equal('opts.unique');
    }
    const bulkError = await rejection(queue.addBulk([{ name: 'report.build', data: {}, opts: { unique: null } }]));
    expect((bulkError as unknown as InvalidJobInputError).issues[0]!.path).to.equal('[0].opts.unique');
    // The same policy written at the call site is accepted.
    const same = await queue.add('report.build', { day: 4 }, { unique: { ...daily } });
    expect(same.unique.outcome).to.equal('deduplicated');
    expect(await queue.getJobCounts('wait')).to.deep.equal({ wait: 1 });
  });

  it('validates the policies when the wrapper is made, naming the job name', () => {
    const queue = ctx.queue('reports');
    let error: unknown;
    try {
      withUniqueness(queue, { policies: { 'report.build': { on_conflict: 'ignroe' as 'ignore' } } });
    } catch (caught) {
      error = caught;
    }
    expect(error).to.be.instanceOf(InvalidJobInputError);
    expect((error as unknown as InvalidJobInputError).issues[0]!.path).to.equal('policies["report.build"].on_conflict');
  });

  it('applies to flow nodes without children and refuses a registered name with children', async function () {
    const flows = withUniqueness(new FlowProducer({ connection: ctx.redis, prefix: ctx.prefix }), { policies: { 'report.build': daily } });
    try {
      const first = await flows.add({ name: 'report.build', queueName: 'reports', data: {} });
      const again = await flows.add({ name: 'report.build', queueName: 'reports', data: { n: 2 } });
      expect((again.job as UniqueJob).unique).to.include({ outcome: 'deduplicated', existingJobId: first.job.id });
      const error = await rejection(
        flows.add({ name: 'report.build', queueName: 'reports', data: {}, children: [{ name: 'part', queueName: 'reports', data: {} }] }),
      );
      expect(error).to.be.instanceOf(InvalidJobInputError);
      expect((error as unknown as InvalidJobInputError).issues[0]!.path).to.equal('name');
    } finally {
      await flows.close();
    }
  });
});
