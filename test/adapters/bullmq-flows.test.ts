/**
 * `withUniqueness(flowProducer)`: `unique` on any leaf of a flow tree (a childless root, or a
 * child) goes through the unique add, the tree in one script with every check first; on a node
 * with children it is refused, naming the node, before anything is written; a tree without
 * `unique` is BullMQ's own. Real Redis.
 */
import { expect } from 'chai';
import { FlowProducer, Job, Worker } from 'bullmq';
import { readUniqueFields, withUniqueness, type UniqueJob, type UniqueJobNode } from '../../adapters/bullmq/index.js';
import { isBackendError, isDuplicateJobError, isInvalidJobInputError } from '../../src/index.js';
import { COMMANDS, composedScripts, flowScriptsProblem } from '../../adapters/bullmq/bullmq-script-set.js';
import { rejection } from '../conformance/suite-context.js';
import { useRedisPrefix } from './bullmq-test-redis.js';
import { replacedIds } from '../replaced-ids.js';

const FILE = 'bullmq-flows.test.ts';

describe('bullmq adapter: withUniqueness(flowProducer)', function () {
  this.timeout(20_000);
  const ctx = useRedisPrefix(FILE);
  const flows = (options: { countDuplicates?: boolean } = {}) => {
    const flow = withUniqueness(new FlowProducer({ connection: ctx.redis, prefix: ctx.prefix }), options);
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
    expect(dup!.job.unique).to.include({ outcome: 'deduplicated', existingJobId: first.id });
    const queue = ctx.queue('q');
    expect(await queue.getJobCounts('wait', 'waiting-children')).to.deep.equal({ wait: 1, 'waiting-children': 1 });
  });

  it("queuesOptions[queue].defaultJobOptions.unique applies to the queue's nodes without children (unique: null opts out), never to a parent", async function () {
    if (flowScriptsProblem() !== null) this.skip();
    const flow = flows();
    const queuesOptions = {
      c: { defaultJobOptions: { unique: { keys: ['type'], on_conflict: 'ignore' } } },
      p: { defaultJobOptions: { unique: {} } },
    };
    const first = await flow.add({ name: 'report', queueName: 'p', children: [{ name: 'fetch', queueName: 'c' }] }, {
      queuesOptions,
    } as never);
    const second = await flow.add(
      {
        name: 'report',
        queueName: 'p',
        children: [
          { name: 'fetch', queueName: 'c' },
          { name: 'fetch', queueName: 'c', opts: { unique: null } },
        ],
      },
      { queuesOptions } as never,
    );
    expect(first.children![0]!.job.unique?.outcome).to.equal('created');
    expect(first.job.unique).to.equal(undefined);
    expect(second.children![0]!.job.unique).to.include({
      outcome: 'deduplicated',
      existingJobId: first.children![0]!.job.id,
    });
    expect(second.children![1]!.job.unique).to.equal(undefined);
    expect(await ctx.queue('c').getJobCounts('wait')).to.deep.equal({ wait: 2 });
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

  it('unique on a node with children is refused naming the node, as BullMQ refuses deduplication there; nothing is written', async () => {
    const flow = flows();
    const error = await rejection(
      flow.add({
        name: 'parent',
        queueName: 'q',
        opts: { unique: {} },
        children: [
          { name: 'a', queueName: 'c', opts: { unique: {} } },
          { name: 'b', queueName: 'c', opts: { unique: {} }, children: [{ name: 'x', queueName: 'c', opts: { unique: {} } }] },
        ],
      }),
    );
    expect(isInvalidJobInputError(error) && error.issues.map((issue) => issue.path)).to.deep.equal([
      'opts.unique',
      'children[1].opts.unique',
    ]);
    const bulk = await rejection(
      flow.addBulk([
        { name: 'ok', queueName: 'q' },
        {
          name: 'p',
          queueName: 'q',
          children: [{ name: 'a', queueName: 'c', opts: { unique: {} }, children: [{ name: 'b', queueName: 'c' }] }],
        },
      ]),
    );
    expect(isInvalidJobInputError(bulk) && bulk.issues.map((issue) => issue.path)).to.deep.equal(['[1].children[0].opts.unique']);
    expect(await ctx.redis.keys(`${ctx.prefix}:*`)).to.deep.equal([]);
  });

  const byArgs = { keys: ['type', 'args'], on_conflict: 'ignore' } as const;
  const dependencies = async (queueName: string, id: string) => {
    const job = await Job.fromId(ctx.queue(queueName), id);
    const { processed = {}, unprocessed = [] } = await job!.getDependencies();
    return { processed: Object.keys(processed).sort(), unprocessed: [...unprocessed].sort() };
  };
  const key = (queueName: string, id: string) => `${ctx.prefix}:${queueName}:${id}`;
  // The keys there are, but each queue's meta hash, which BullMQ's Queue writes when it connects.
  const written = async () => (await ctx.redis.keys(`${ctx.prefix}:*`)).filter((name) => !name.endsWith(':meta')).sort();

  it("queue.add with opts.parent: a unique child of an existing parent, with a counter id; its duplicate is not the parent's dependency", async () => {
    const flow = flows();
    const parent = await flow.add({ name: 'report', queueName: 'p', children: [{ name: 'plain', queueName: 'c' }] });
    const queue = withUniqueness(ctx.queue('c'));
    const opts = { unique: byArgs, parent: { id: parent.job.id!, queue: `${ctx.prefix}:p` } };
    const child = await queue.add('fetch', { customer: 7 }, opts);
    expect(child.unique.outcome).to.equal('created');
    expect(child.id).to.match(/^\d+$/);
    const again = await queue.add('fetch', { customer: 7 }, opts);
    expect(again.unique).to.include({ outcome: 'deduplicated', existingJobId: child.id });
    const { unprocessed } = await dependencies('p', parent.job.id!);
    expect(unprocessed.filter((name) => name === key('c', child.id!))).to.have.length(1);
    const missing = await rejection(
      queue.add('fetch', { customer: 8 }, { unique: byArgs, parent: { id: 'gone', queue: `${ctx.prefix}:p` } }),
    );
    expect(isInvalidJobInputError(missing) && missing.issues.map((issue) => issue.path)).to.deep.equal(['opts.parent']);
    // addBulk: the same, entry by entry; a refused one comes back `rejected` with the error a single add throws.
    const [bulkChild, bulkDup, bulkMissing] = await queue.addBulk([
      { name: 'fetch', data: { customer: 9 }, opts },
      { name: 'fetch', data: { customer: 7 }, opts },
      { name: 'fetch', data: { customer: 10 }, opts: { unique: byArgs, parent: { id: 'gone', queue: `${ctx.prefix}:p` } } },
    ]);
    expect(bulkChild!.unique!.outcome).to.equal('created');
    expect(bulkDup!.unique).to.include({ outcome: 'deduplicated', existingJobId: child.id });
    expect(bulkMissing!.unique!.outcome).to.equal('rejected');
    const bulkError = (bulkMissing!.unique as { error?: unknown }).error;
    expect(isInvalidJobInputError(bulkError) && bulkError.issues.map((issue) => issue.path)).to.deep.equal(['[2].opts.parent']);
    expect((await dependencies('p', parent.job.id!)).unprocessed).to.include(key('c', bulkChild!.id!));
  });

  const supported = flowScriptsProblem() === null;

  (supported ? it.skip : it)(
    'on a BullMQ without the flow release step, a unique node under a parent is refused, nothing written',
    async () => {
      const flow = flows();
      const error = await rejection(
        flow.add({ name: 'parent', queueName: 'p', children: [{ name: 'child', queueName: 'c', opts: { unique: {} } }] }),
      );
      expect(isBackendError(error) && error.written).to.equal(false);
      expect(error.message).to.match(/releaseParentIfNoPendingDependencies/);
      expect(await ctx.redis.keys(`${ctx.prefix}:*`)).to.deep.equal([]);
    },
  );

  (supported ? describe : describe.skip)('unique nodes under a parent (unique-flow)', () => {
    /**
     * Every key of the test with its content (the state a re-sent flow must leave as it was), but
     * the events streams and the queues' id counters: BullMQ's add scripts INCR the counter on
     * every call, a known custom id too, which no job's id depends on.
     */
    const snapshot = async () => {
      const out: Record<string, unknown> = {};
      for (const name of (await ctx.redis.keys(`${ctx.prefix}:*`)).sort()) {
        if (/^[^:]+:[^:]+:[^:]+:[^:]+:id$/.test(name)) continue;
        const type = await ctx.redis.type(name);
        if (type === 'hash') out[name] = await ctx.redis.hgetall(name);
        else if (type === 'set') out[name] = (await ctx.redis.smembers(name)).sort();
        else if (type === 'list') out[name] = await ctx.redis.lrange(name, 0, -1);
        else if (type === 'zset') out[name] = await ctx.redis.zrange(name, '0', '-1', 'WITHSCORES');
        else if (type === 'string') out[name] = await ctx.redis.get(name);
        else if (type !== 'stream') out[name] = type;
      }
      return out;
    };
    const streams = async () => {
      const out: Record<string, string[][]> = {};
      for (const name of await ctx.redis.keys(`${ctx.prefix}:*:events`))
        out[name] = (await ctx.redis.xrange(name, '-', '+')).map(([, fields]) => fields);
      return out;
    };

    it("§5 a unique child is created as its parent's dependency, beside plain children; the parent waits for it", async () => {
      const flow = flows();
      const tree = await flow.add({
        name: 'report',
        queueName: 'p',
        children: [
          { name: 'fetch', queueName: 'c', data: { customer: 1 }, opts: { unique: byArgs } },
          { name: 'plain', queueName: 'c', data: {} },
        ],
      });
      const [unique, plain] = tree.children!;
      expect(unique!.job.unique?.outcome).to.equal('created');
      expect(await dependencies('p', tree.job.id!)).to.deep.equal({
        processed: [],
        unprocessed: [key('c', unique!.job.id!), key('c', plain!.job.id!)].sort(),
      });
      expect(await ctx.queue('p').getJobCounts('waiting-children')).to.deep.equal({ 'waiting-children': 1 });
      const stored = await ctx.queue('c').getJob(unique!.job.id!);
      expect(stored!.parentKey).to.equal(key('p', tree.job.id!));
    });

    it("§5.2 ignore: a duplicate child is the existing job and is not its parent's dependency; a parent left with none runs", async () => {
      const flow = flows();
      const first = await flow.add({
        name: 'report',
        queueName: 'p',
        children: [{ name: 'fetch', queueName: 'c', data: { customer: 1 }, opts: { unique: byArgs } }],
      });
      const second = await flow.add({
        name: 'report',
        queueName: 'p',
        children: [
          { name: 'fetch', queueName: 'c', data: { customer: 1 }, opts: { unique: byArgs } },
          { name: 'fetch', queueName: 'c', data: { customer: 2 }, opts: { unique: byArgs } },
        ],
      });
      const [dup, fresh] = second.children!;
      expect(dup!.job.unique).to.include({ outcome: 'deduplicated', existingJobId: first.children![0]!.job.id });
      expect(dup!.job.id).to.equal(first.children![0]!.job.id);
      expect(await dependencies('p', second.job.id!)).to.deep.equal({ processed: [], unprocessed: [key('c', fresh!.job.id!)] });
      // Every child a duplicate: nothing to wait for, the parent goes to wait at once.
      const third = await flow.add({
        name: 'report',
        queueName: 'p',
        children: [{ name: 'fetch', queueName: 'c', data: { customer: 2 }, opts: { unique: byArgs } }],
      });
      expect(await ctx.queue('p').getJobState(third.job.id!)).to.equal('waiting');
      expect(await ctx.queue('c').getJobCounts('wait')).to.deep.equal({ wait: 2 });
    });

    it('§5.1 reject: a duplicate child refuses the whole flow with DuplicateJobError; nothing of it is written', async () => {
      const flow = flows();
      const first = await flow.add({ name: 'fetch', queueName: 'c', data: { customer: 1 }, opts: { unique: byArgs } });
      const before = await written();
      const error = await rejection(
        flow.add({
          name: 'report',
          queueName: 'p',
          children: [
            { name: 'plain', queueName: 'c' },
            { name: 'fetch', queueName: 'c', data: { customer: 2 }, opts: { unique: { ...byArgs, on_conflict: 'reject' } } },
            { name: 'fetch', queueName: 'c', data: { customer: 1 }, opts: { unique: { ...byArgs, on_conflict: 'reject' } } },
          ],
        }),
      );
      expect(isDuplicateJobError(error) && error.existingJobId).to.equal(first.job.id);
      // A reject records nothing but its `deduplicated` event, as a single add's reject.
      expect(await written()).to.deep.equal(before);
      expect(await ctx.queue('p').count()).to.equal(0);
      expect(await ctx.queue('c').getJobCounts('wait')).to.deep.equal({ wait: 1 });
    });

    it('two unique nodes of one flow with one key: the second meets the first, as if added one by one (ignore, reject)', async () => {
      const flow = flows();
      const tree = await flow.add({
        name: 'report',
        queueName: 'p',
        children: [
          { name: 'fetch', queueName: 'c', data: { customer: 1 }, opts: { unique: byArgs } },
          { name: 'fetch', queueName: 'c', data: { customer: 1 }, opts: { unique: byArgs } },
        ],
      });
      const [a, b] = tree.children!;
      expect(a!.job.unique?.outcome).to.equal('created');
      expect(b!.job.unique).to.include({ outcome: 'deduplicated', existingJobId: a!.job.id });
      expect(await dependencies('p', tree.job.id!)).to.deep.equal({ processed: [], unprocessed: [key('c', a!.job.id!)] });
      const before = await written();
      const reject = { keys: ['type', 'args'], on_conflict: 'reject' } as const;
      const error = await rejection(
        flow.add({
          name: 'report',
          queueName: 'p',
          children: [
            { name: 'fetch', queueName: 'c', data: { customer: 9 }, opts: { unique: reject } },
            { name: 'fetch', queueName: 'c', data: { customer: 9 }, opts: { unique: reject } },
          ],
        }),
      );
      expect(isDuplicateJobError(error) && error.existingJobState).to.equal('available');
      expect(await written()).to.deep.equal(before);
    });

    it('§5.2 replace: the new child takes the place; the replaced child leaves its old parent, which runs once nothing else is pending', async () => {
      const flow = flows();
      const replace = { keys: ['type', 'args'], on_conflict: 'replace' } as const;
      const old = await flow.add({
        name: 'report',
        queueName: 'p',
        children: [{ name: 'fetch', queueName: 'c', data: { customer: 1 }, opts: { unique: replace } }],
      });
      const oldChild = old.children![0]!.job.id!;
      const next = await flow.add({
        name: 'report',
        queueName: 'p',
        children: [{ name: 'fetch', queueName: 'c', data: { customer: 1 }, opts: { unique: replace } }],
      });
      const child = next.children![0]!.job as UniqueJob;
      expect(child.unique?.outcome).to.equal('replaced');
      expect(replacedIds(child.unique)).to.deep.equal([oldChild]);
      expect(await ctx.queue('c').getJob(oldChild)).to.equal(undefined);
      expect(await ctx.queue('p').getJobState(old.job.id!)).to.equal('waiting');
      expect(await dependencies('p', next.job.id!)).to.deep.equal({ processed: [], unprocessed: [key('c', child.id!)] });
      expect(await ctx.queue('p').getJobState(next.job.id!)).to.equal('waiting-children');
    });

    it('§5.2 replace under the same parent (opts.parent): the parent waits for the new child, not released when the old one leaves', async () => {
      const flow = flows();
      const replace = { keys: ['type', 'args'], on_conflict: 'replace' } as const;
      const parent = await flow.add({
        name: 'report',
        queueName: 'p',
        children: [{ name: 'fetch', queueName: 'c', data: { customer: 1 }, opts: { unique: replace } }],
      });
      const node = await flow.add({
        name: 'fetch',
        queueName: 'c',
        data: { customer: 1 },
        opts: { unique: replace, parent: { id: parent.job.id!, queue: `${ctx.prefix}:p` } },
      });
      expect(node.job.unique?.outcome).to.equal('replaced');
      expect(replacedIds(node.job.unique)).to.deep.equal([parent.children![0]!.job.id]);
      expect(await dependencies('p', parent.job.id!)).to.deep.equal({ processed: [], unprocessed: [key('c', node.job.id!)] });
      expect(await ctx.queue('p').getJobState(parent.job.id!), 'the parent still has a pending child').to.equal('waiting-children');
    });

    it('x_update: the existing child is updated in place and stays with its own parent', async () => {
      const flow = flows();
      const update = { keys: ['type'], on_conflict: 'ignore', x_update: { available: ['args'] } } as const;
      const first = await flow.add({
        name: 'report',
        queueName: 'p',
        children: [{ name: 'fetch', queueName: 'c', data: { v: 1 }, opts: { unique: update } }],
      });
      const second = await flow.add({
        name: 'report',
        queueName: 'p',
        children: [{ name: 'fetch', queueName: 'c', data: { v: 2 }, opts: { unique: update } }],
      });
      const updated = second.children![0]!.job as UniqueJob;
      expect(updated.unique).to.deep.include({ outcome: 'updated', changed: ['args'] });
      expect(updated.id).to.equal(first.children![0]!.job.id);
      expect((await ctx.queue('c').getJob(updated.id!))!.data).to.deep.equal({ v: 2 });
      expect((await ctx.queue('c').getJob(updated.id!))!.parentKey).to.equal(key('p', first.job.id!));
      expect(await ctx.queue('p').getJobState(second.job.id!)).to.equal('waiting');
      // Two nodes updating one job in one flow: the second meets it updated (as if added one by one);
      // a reject after the update is refused before anything is written (the check cannot replay the update).
      const twice = await flow.add({
        name: 'report',
        queueName: 'p',
        children: [
          { name: 'fetch', queueName: 'c', data: { v: 3 }, opts: { unique: update } },
          { name: 'fetch', queueName: 'c', data: { v: 4 }, opts: { unique: update } },
        ],
      });
      expect(twice.children!.map((child) => child.job.unique?.outcome)).to.deep.equal(['updated', 'updated']);
      expect((await ctx.queue('c').getJob(updated.id!))!.data).to.deep.equal({ v: 4 });
      const before = await written();
      const reject = await rejection(
        flow.add({
          name: 'report',
          queueName: 'p',
          children: [
            { name: 'fetch', queueName: 'c', data: { v: 5 }, opts: { unique: update } },
            { name: 'fetch', queueName: 'c', data: { v: 6 }, opts: { unique: { keys: ['type'], on_conflict: 'reject' } } },
          ],
        }),
      );
      expect(isInvalidJobInputError(reject) && reject.issues.map((issue) => issue.path)).to.deep.equal(['children[1].opts.unique']);
      expect(await written()).to.deep.equal(before);
      expect((await ctx.queue('c').getJob(updated.id!))!.data).to.deep.equal({ v: 4 });
    });

    it('a unique root under an existing parent (opts.parent) becomes its dependency; a missing parent refuses it, nothing written', async () => {
      const flow = flows();
      const parent = await flow.add({ name: 'report', queueName: 'p', children: [{ name: 'plain', queueName: 'c' }] });
      const node = await flow.add({
        name: 'fetch',
        queueName: 'c',
        data: { customer: 3 },
        opts: { unique: byArgs, parent: { id: parent.job.id!, queue: `${ctx.prefix}:p` } },
      });
      expect(node.job.unique?.outcome).to.equal('created');
      expect((await dependencies('p', parent.job.id!)).unprocessed).to.include(key('c', node.job.id!));
      const before = await written();
      const error = await rejection(
        flow.add({
          name: 'fetch',
          queueName: 'c',
          data: { customer: 4 },
          opts: { unique: byArgs, parent: { id: 'nope', queue: `${ctx.prefix}:p` } },
        }),
      );
      expect(isInvalidJobInputError(error) && error.issues.map((issue) => issue.path)).to.deep.equal(['opts.parent']);
      expect(await written()).to.deep.equal(before);
    });

    it('bad input names the node (a policy field, a jobId used twice, a taken jobId); nothing written', async () => {
      const flow = flows();
      const bad = await rejection(
        flow.add({
          name: 'p',
          queueName: 'p',
          children: [{ name: 'a', queueName: 'c', opts: { unique: { on_conflict: 'bogus' as never } } }],
        }),
      );
      expect(isInvalidJobInputError(bad) && bad.issues.map((issue) => issue.path)).to.deep.equal(['children[0].unique.on_conflict']);
      const twice = await rejection(
        flow.add({
          name: 'p',
          queueName: 'p',
          children: [
            { name: 'a', queueName: 'c', opts: { jobId: 'same', unique: {} } },
            { name: 'b', queueName: 'c', opts: { jobId: 'same' } },
          ],
        }),
      );
      expect(isInvalidJobInputError(twice) && twice.issues.map((issue) => issue.path)).to.deep.equal(['children[1].opts.jobId']);
      expect(await ctx.redis.keys(`${ctx.prefix}:*`)).to.deep.equal([]);
      await ctx.queue('c').add('taken', {}, { jobId: 'taken' });
      const before = await written();
      const taken = await rejection(
        flow.addBulk([{ name: 'p', queueName: 'p', children: [{ name: 'a', queueName: 'c', opts: { jobId: 'taken', unique: {} } }] }]),
      );
      expect(isInvalidJobInputError(taken) && taken.issues.map((issue) => issue.path)).to.deep.equal(['[0].children[0].opts.jobId']);
      expect(await written()).to.deep.equal(before);
    });

    it("addBulk: each flow with a unique node in its own script, plain flows in BullMQ's call, answers in order", async () => {
      const flow = flows();
      const [plain, first, second] = await flow.addBulk([
        { name: 'p', queueName: 'p', children: [{ name: 'x', queueName: 'c' }] },
        { name: 'p', queueName: 'p', children: [{ name: 'fetch', queueName: 'c', data: { customer: 1 }, opts: { unique: byArgs } }] },
        { name: 'p', queueName: 'p', children: [{ name: 'fetch', queueName: 'c', data: { customer: 1 }, opts: { unique: byArgs } }] },
      ]);
      expect(plain!.children).to.have.length(1);
      expect(first!.children![0]!.job.unique?.outcome).to.equal('created');
      expect(second!.children![0]!.job.unique).to.include({
        outcome: 'deduplicated',
        existingJobId: first!.children![0]!.job.id,
      });
      expect(await ctx.queue('p').getJobCounts('wait', 'waiting-children')).to.deep.equal({ wait: 1, 'waiting-children': 2 });
    });

    it('§8.1 a re-sent unique-flow (its reply lost) answers the first run: the same ids and outcomes, nothing written again', async () => {
      const flow = flows({ countDuplicates: true });
      const replace = { keys: ['type', 'args'], on_conflict: 'replace' } as const;
      const existing = await flow.add({ name: 'fetch', queueName: 'c', data: { customer: 0 }, opts: { unique: byArgs } });
      const old = await flow.add({
        name: 'report',
        queueName: 'p',
        children: [{ name: 'fetch', queueName: 'c', data: { customer: 7 }, opts: { unique: replace } }],
      });
      // unique-flow's command as the client sends it, and its reply: a re-send is the same command.
      const script = composedScripts().find((candidate) => candidate.command === COMMANDS.uniqueFlow)!;
      const sent: { target: Parameters<typeof script.run>[0]; args: Parameters<typeof script.run>[1]; reply: unknown }[] = [];
      const run = script.run.bind(script);
      script.run = async (target, args) => {
        const reply = await run(target, args);
        sent.push({ target, args, reply });
        return reply;
      };
      let tree: Awaited<ReturnType<typeof flow.add>>;
      try {
        tree = await flow.add({
          name: 'report',
          queueName: 'p',
          children: [
            { name: 'fetch', queueName: 'c', data: { customer: 1 }, opts: { unique: byArgs } },
            { name: 'fetch', queueName: 'c', data: { customer: 0 }, opts: { unique: byArgs } },
            { name: 'plain', queueName: 'c' },
            { name: 'fetch', queueName: 'c', data: { customer: 7 }, opts: { unique: replace } },
            {
              name: 'middle',
              queueName: 'm',
              children: [{ name: 'fetch', queueName: 'c', data: { customer: 2 }, opts: { unique: byArgs } }],
            },
          ],
        });
      } finally {
        delete (script as { run?: unknown }).run;
      }
      const outcomes = (node: UniqueJobNode): unknown[] => [
        node.job.unique?.outcome ?? 'plain',
        ...(node.children ?? []).flatMap(outcomes),
      ];
      expect(outcomes(tree)).to.deep.equal(['plain', 'created', 'deduplicated', 'plain', 'replaced', 'plain', 'created']);
      expect(tree.children![1]!.job.id).to.equal(existing.job.id);
      expect(sent).to.have.length(1);
      const before = await snapshot();
      const events = await streams();
      const again = await run(sent[0]!.target, sent[0]!.args);
      // What the adapter reads of each node's reply: an ignore's decision time (nowMs) and a replaced
      // job's prior state (read as cancelled) are not part of the outcome.
      const outcomeOf = (reply: unknown) =>
        (reply as [string, unknown[]])[1].map((node) => {
          if (!Array.isArray(node)) return node;
          if (node[0] === 'ignored') return [...node.slice(0, 4), ...node.slice(5)];
          if (node[0] === 'replaced') return [...node.slice(0, 3), (node[3] as unknown[][]).map((job) => [job[0], job[1], job[3]])];
          return node;
        });
      expect(outcomeOf(again), 'the re-sent flow answers what the first run did, node by node').to.deep.equal(outcomeOf(sent[0]!.reply));
      expect(await snapshot(), 'the re-sent flow wrote nothing: no second job, the same dependencies, index and states').to.deep.equal(
        before,
      );
      const added = Object.entries(await streams()).flatMap(([stream, entries]) =>
        entries.slice(events[stream]?.length ?? 0).map((fields) => `${stream.slice(ctx.prefix.length + 1)}: ${fields[1]}`),
      );
      // BullMQ answers a plain node's known id with `duplicated`; a duplicate node's ignore with `deduplicated`.
      expect(
        added.filter((entry) => !/: (duplicated|deduplicated)$/.test(entry)),
        'events of the re-sent flow',
      ).to.deep.equal([]);
      expect(await ctx.queue('p').getJobState(old.job.id!)).to.equal('waiting');
      // Duplicate counts: the deduplicated node counted once on the job it met, not again when re-sent.
      expect((await readUniqueFields(ctx.queue('c'), existing.job.id!))?.duplicate_count).to.equal(1);
    });

    it("the flow runs: a worker completes the unique child, then its parent, which sees the child's result", async () => {
      const flow = flows();
      const tree = await flow.add({
        name: 'report',
        queueName: 'p',
        children: [{ name: 'fetch', queueName: 'c', data: { customer: 5 }, opts: { unique: byArgs } }],
      });
      const connection = ctx.connect();
      const children = new Worker('c', async () => 'fetched', { connection, prefix: ctx.prefix });
      const seen = new Promise<unknown>((resolve) => {
        const parents = new Worker(
          'p',
          async (job) => {
            const values = await job.getChildrenValues();
            resolve(values);
            return 'done';
          },
          { connection: ctx.connect(), prefix: ctx.prefix },
        );
        ctx.closeLater(parents);
      });
      ctx.closeLater(children);
      expect(await seen).to.deep.equal({ [key('c', tree.children![0]!.job.id!)]: 'fetched' });
    });
  });
});
