/**
 * `withUniqueness(flowProducer)`: `unique` on a childless flow root goes through the unique add;
 * on a node with children or under a parent it is refused, naming the node, before anything is
 * written; a tree without `unique` is BullMQ's own. Real Redis.
 */
import { expect } from 'chai';
import { FlowProducer } from 'bullmq';
import { withUniqueness, type UniqueJob } from '../../adapters/bullmq/index.js';
import { isInvalidJobInputError } from '../../src/index.js';
import { rejection } from '../conformance/suite-context.js';
import { useRedisPrefix } from './bullmq-test-redis.js';

const FILE = 'bullmq-flows.test.ts';

describe('bullmq adapter: withUniqueness(flowProducer)', function () {
  this.timeout(20_000);
  const ctx = useRedisPrefix(FILE);
  const flows = () => {
    const flow = withUniqueness(new FlowProducer({ connection: ctx.redis, prefix: ctx.prefix }));
    ctx.closeLater(flow);
    return flow;
  };

  it('a unique childless root: created, then deduplicated (the existing job), in add and addBulk', async () => {
    const flow = flows();
    const unique = { keys: ['type', 'queue'], on_conflict: 'ignore' } as const;
    const first = (await flow.add({ name: 'sync', queueName: 'q', data: { n: 1 }, opts: { unique } })).job as UniqueJob;
    expect(first.unique.outcome).to.equal('created');
    const second = (await flow.add({ name: 'sync', queueName: 'q', data: { n: 2 }, opts: { unique } })).job as UniqueJob;
    expect(second.unique).to.include({ outcome: 'deduplicated', existingJobId: first.id });
    const [plain, dup] = await flow.addBulk([
      { name: 'parent', queueName: 'q', children: [{ name: 'child', queueName: 'c' }] },
      { name: 'sync', queueName: 'q', opts: { unique } },
    ]);
    expect(plain!.children).to.have.length(1);
    expect((dup!.job as UniqueJob).unique).to.include({ outcome: 'deduplicated', existingJobId: first.id });
    const queue = ctx.queue('q');
    expect(await queue.getJobCounts('wait', 'waiting-children')).to.deep.equal({ wait: 1, 'waiting-children': 1 });
  });

  it("a unique root gets its queue's defaultJobOptions from FlowOpts.queuesOptions, under its own options", async () => {
    const flow = flows();
    const node = await flow.add(
      { name: 'sync', queueName: 'q', opts: { unique: {}, priority: 2 } },
      { queuesOptions: { q: { defaultJobOptions: { attempts: 5, priority: 9 } }, other: { defaultJobOptions: { attempts: 7 } } } },
    );
    const stored = await ctx.queue('q').getJob(node.job.id!);
    expect(stored!.opts).to.include({ attempts: 5, priority: 2 });
  });

  it('unique on a child, or on a root with children, is refused naming the node; nothing is written', async () => {
    const flow = flows();
    const error = await rejection(
      flow.add({
        name: 'parent',
        queueName: 'q',
        opts: { unique: {} },
        children: [
          { name: 'a', queueName: 'c' },
          { name: 'b', queueName: 'c', opts: { unique: {} }, children: [{ name: 'x', queueName: 'c', opts: { unique: {} } }] },
        ],
      }),
    );
    expect(isInvalidJobInputError(error) && error.issues.map((issue) => issue.path)).to.deep.equal([
      'opts.unique',
      'children[1].opts.unique',
      'children[1].children[0].opts.unique',
    ]);
    const bulk = await rejection(
      flow.addBulk([
        { name: 'ok', queueName: 'q' },
        { name: 'p', queueName: 'q', children: [{ name: 'a', queueName: 'c', opts: { unique: {} } }] },
      ]),
    );
    expect(isInvalidJobInputError(bulk) && bulk.issues.map((issue) => issue.path)).to.deep.equal(['[1].children[0].opts.unique']);
    expect(await ctx.redis.keys(`${ctx.prefix}:*`)).to.deep.equal([]);
  });
});
