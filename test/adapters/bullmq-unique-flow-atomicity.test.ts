/**
 * unique-flow's all-or-nothing, at its edges: what an earlier node does to stored jobs (a replace,
 * an update, a touch) or to a parent of the flow is accounted for by the check pass, so nothing
 * fails in the write pass after a node was written. Each case once failed part-way (a review's
 * repros); each is now refused before anything is written, naming the node. Real Redis.
 */
import { expect } from 'chai';
import { FlowProducer } from 'bullmq';
import { createBullMQBackend, withUniqueness } from '../../adapters/bullmq/index.js';
import { flowScriptsProblem } from '../../adapters/bullmq/bullmq-script-set.js';
import { isInvalidJobInputError } from '../../src/index.js';
import { rejection } from '../conformance/suite-context.js';
import { useRedisPrefix } from './bullmq-test-redis.js';

describe('bullmq adapter: unique-flow refuses before writing what it could not finish', function () {
  this.timeout(20_000);
  const ctx = useRedisPrefix('bullmq-unique-flow-atomicity.test.ts');
  // Every key and its content but BullMQ's meta hashes (a queue writes its own when it connects)
  // and the queues' id counters (BullMQ's add INCRs them for a custom id too).
  const snapshot = async () => {
    const out: Record<string, unknown> = {};
    for (const name of (await ctx.redis.keys(`${ctx.prefix}:*`)).sort()) {
      if (name.endsWith(':meta') || name.endsWith(':id') || name.endsWith(':events')) continue;
      const type = await ctx.redis.type(name);
      if (type === 'hash') out[name] = await ctx.redis.hgetall(name);
      else if (type === 'set') out[name] = (await ctx.redis.smembers(name)).sort();
      else if (type === 'list') out[name] = await ctx.redis.lrange(name, 0, -1);
      else if (type === 'zset') out[name] = await ctx.redis.zrange(name, '0', '-1', 'WITHSCORES');
      else out[name] = await ctx.redis.get(name);
    }
    return out;
  };
  const paths = (error: unknown) => (isInvalidJobInputError(error) ? error.issues.map((issue) => issue.path) : error);
  const backend = () => {
    const made = createBullMQBackend({ connection: ctx.redis, prefix: ctx.prefix });
    ctx.closeLater(made);
    return made;
  };
  const flows = () => {
    const flow = withUniqueness(new FlowProducer({ connection: ctx.redis, prefix: ctx.prefix }));
    ctx.closeLater(flow);
    return flow;
  };
  const replace = { keys: ['type'], on_conflict: 'replace' } as const;

  it('§5.2 a replace that would cancel its own parent (queue.add with opts.parent) is refused; the parent stays', async () => {
    const queue = withUniqueness(ctx.queue('q'));
    const parent = await queue.add('sync', { n: 1 }, { unique: replace });
    const before = await snapshot();
    const error = await rejection(queue.add('sync', { n: 2 }, { unique: replace, parent: { id: parent.id!, queue: `${ctx.prefix}:q` } }));
    expect(paths(error)).to.deep.equal(['opts.unique']);
    expect(error.message).to.contain(`job ${parent.id}`);
    expect(await snapshot()).to.deep.equal(before);
  });

  it("§5.2 a unique child whose replace would cancel the flow's root (a stored unique job the root names) is refused", async function () {
    if (flowScriptsProblem() !== null) this.skip();
    const queue = withUniqueness(ctx.queue('q'));
    await queue.add('sync', { n: 1 }, { unique: replace, jobId: 'root1' });
    const before = await snapshot();
    const error = await rejection(
      flows().add({
        name: 'root',
        queueName: 'q',
        opts: { jobId: 'root1' },
        children: [{ name: 'sync', queueName: 'q', data: { n: 2 }, opts: { unique: replace } }],
      }),
    );
    expect(paths(error)).to.deep.equal(['children[0].opts.unique']);
    expect(await snapshot()).to.deep.equal(before);
  });

  it("a plain node naming the child of a parent this flow creates again (BullMQ's -7) is refused before the parent is written", async function () {
    if (flowScriptsProblem() !== null) this.skip();
    const plain = new FlowProducer({ connection: ctx.redis, prefix: ctx.prefix });
    ctx.closeLater(plain);
    await plain.add({ name: 'r', queueName: 'p', opts: { jobId: 'r1' }, children: [{ name: 'x', queueName: 'c', opts: { jobId: 'x1' } }] });
    await ctx.queue('p').remove('r1', { removeChildren: false });
    const before = await snapshot();
    const error = await rejection(
      flows().add({
        name: 'r',
        queueName: 'p',
        opts: { jobId: 'r1' },
        children: [
          { name: 'a', queueName: 'p', opts: { jobId: 'a1' }, children: [{ name: 'x', queueName: 'c', opts: { jobId: 'x1' } }] },
          { name: 'u', queueName: 'c', opts: { unique: {} } },
        ],
      }),
    );
    expect(paths(error)).to.deep.equal(['children[0].children[0].opts.jobId']);
    expect(await snapshot()).to.deep.equal(before);
  });

  it("§5.2 a replace after a node of its key that updates the flow's root (x_update promotes it) is refused: it could then cancel the root", async function () {
    if (flowScriptsProblem() !== null) this.skip();
    const queue = withUniqueness(ctx.queue('q'));
    const update = { keys: ['type'], on_conflict: 'ignore', x_update: { scheduled: ['scheduled_at'] } } as const;
    await queue.add('sync', { n: 0 }, { unique: update, jobId: 'P1', delay: 3_600_000 });
    const before = await snapshot();
    const error = await rejection(
      flows().add({
        name: 'root',
        queueName: 'q',
        opts: { jobId: 'P1' },
        children: [
          { name: 'sync', queueName: 'q', data: { n: 1 }, opts: { unique: update } },
          {
            name: 'sync',
            queueName: 'q',
            data: { n: 2 },
            opts: { unique: { keys: ['type'], states: ['available'], on_conflict: 'replace' } },
          },
        ],
      }),
    );
    expect(paths(error)).to.deep.equal(['children[1].opts.unique']);
    expect(await snapshot()).to.deep.equal(before);
  });

  it('enqueueMany: an id claim sees the queues earlier jobs of the batch join (a plain BullMQ job holding the id there)', async () => {
    const jobs = backend();
    await ctx.queue('qa').add('plain', {}, { jobId: 'Y1' });
    await ctx.queue('qc').add('plain', {}, { jobId: 'Y2' });
    const before = await snapshot();
    for (const first of [
      { queue: 'qa', id: 'Z1' },
      { queue: 'qc', unique: {} },
    ]) {
      const error = await rejection(
        jobs.enqueueMany([
          { type: 't', args: { n: 1 }, ...first },
          { type: 't', args: { n: 2 }, queue: 'qb', id: first.queue === 'qa' ? 'Y1' : 'Y2' },
        ]),
      );
      expect(paths(error)).to.deep.equal(['[1].id']);
    }
    expect(await snapshot()).to.deep.equal(before);
  });

  for (const [title, first, second] of [
    [
      "a replace_except_schedule (the new job takes the stored job's due time)",
      { keys: ['type'], on_conflict: 'replace_except_schedule' },
      { keys: ['type'], states: ['scheduled'], period: 'PT1S', on_conflict: 'reject' },
    ],
    ['a replace (the stored job becomes cancelled)', replace, { keys: ['type'], states: ['cancelled'], on_conflict: 'reject' }],
    [
      'an ignore under x_period_anchor last_duplicate, before a replace (the stored job is touched)',
      { keys: ['type'], period: 'PT1H', x_period_anchor: 'last_duplicate', on_conflict: 'ignore' },
      { keys: ['type'], period: 'PT1S', x_period_anchor: 'last_duplicate', on_conflict: 'replace' },
    ],
    [
      'an x_update of the due time, before a replace anchored on it',
      { keys: ['type'], on_conflict: 'ignore', x_update: { scheduled: ['scheduled_at'] } },
      { keys: ['type'], period: 'PT1S', x_period_anchor: 'scheduled_at', on_conflict: 'replace' },
    ],
    [
      'an ignore under x_period_anchor last_duplicate (the stored job is touched)',
      { keys: ['type'], period: 'PT1H', x_period_anchor: 'last_duplicate', on_conflict: 'ignore' },
      { keys: ['type'], period: 'PT1S', x_period_anchor: 'last_duplicate', on_conflict: 'reject' },
    ],
  ] as const) {
    it(`enqueueMany: a reject or replace after ${title} of its key is refused before anything is written`, async () => {
      const jobs = backend();
      await jobs.enqueue({ type: 't', args: { n: 0 }, unique: first, scheduled_at: new Date(Date.now() + 3_600_000) });
      const before = await snapshot();
      const error = await rejection(
        jobs.enqueueMany([
          { type: 't', args: { n: 1 }, unique: first },
          { type: 't', args: { n: 2 }, unique: second },
        ]),
      );
      expect(paths(error)).to.deep.equal(['[1].unique']);
      expect(await snapshot()).to.deep.equal(before);
      // Each on its own is fine: the batch without the reject goes in.
      expect((await jobs.enqueueMany([{ type: 't', args: { n: 1 }, unique: first }])).map((result) => result.outcome)).to.have.length(1);
    });
  }
});
