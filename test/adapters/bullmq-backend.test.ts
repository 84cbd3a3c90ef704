/**
 * `createBullMQBackend` beyond the conformance suite: capabilities, the OJS view of BullMQ jobs,
 * cancel (including an active job), ids, and finding jobs from another process's backend.
 */
import { randomUUID } from 'node:crypto';
import { FlowProducer, Worker, type JobNode } from 'bullmq';
import { expect } from 'chai';
import { createBullMQBackend, type BullMQBackend } from '../../adapters/bullmq/index.js';
import { flowScriptsProblem } from '../../adapters/bullmq/bullmq-script-set.js';
import { InvalidTransitionError, InvalidJobInputError, JobNotFoundError } from '../../src/index.js';
import { rejection } from '../conformance/suite-context.js';
import { redisTimeMs, useRedisPrefix } from './bullmq-test-redis.js';

describe('bullmq adapter: createBullMQBackend', function () {
  this.timeout(20_000);
  const ctx = useRedisPrefix('bullmq-backend.test.ts');
  let backend: BullMQBackend;
  beforeEach(function () {
    backend = createBullMQBackend({ connection: ctx.redis, prefix: ctx.prefix });
    ctx.closeLater(backend);
  });

  it('declares strong uniqueness, its mechanism, and that it does not replace active jobs', function () {
    expect(backend.capabilities.unique_jobs).to.deep.include({ strength: 'strong', replace_active: false });
    expect(backend.capabilities.unique_jobs.mechanism).to.match(/Lua/);
  });

  it('maps OJS fields onto BullMQ and reads them back: queue, type, args, meta, attempts, priority, schedule, Redis-time created_at', async function () {
    const before = await redisTimeMs(ctx.redis);
    const scheduledAt = new Date(Date.now() + 60_000);
    const { job } = await backend.enqueue({
      type: 'report.build',
      queue: 'reports',
      args: { id: 7 },
      meta: { tenant: 'acme' },
      max_attempts: 5,
      priority: 10,
      scheduled_at: scheduledAt,
      unique: { keys: ['type', 'meta'], meta_keys: ['tenant'] },
    });
    const after = await redisTimeMs(ctx.redis);
    const bull = await backend.queue('reports').getJob(job.id);
    expect(bull).to.include({ name: 'report.build', priority: 1_000_000 - 10 });
    expect(bull!.data).to.deep.equal({ id: 7 });
    expect(bull!.opts.attempts).to.equal(5);
    expect(await bull!.getState()).to.equal('delayed');
    const read = (await backend.getJob(job.id))!;
    expect(read).to.deep.include({ type: 'report.build', queue: 'reports', state: 'scheduled', max_attempts: 5, priority: 10, attempt: 0 });
    expect(read.meta).to.deep.equal({ tenant: 'acme' });
    expect(read.uniqueness_key).to.be.a('string').with.length(64);
    expect(Date.parse(read.created_at)).to.be.within(before, after);
    // The delay BullMQ stores is counted on the producer's clock from the add, on Redis' from created_at:
    // compared with created_at, never with the producer's clock.
    expect(Date.parse(read.scheduled_at) - Date.parse(read.created_at))
      .to.be.above(0)
      .and.at.most(60_000);
  });

  it("priority: a job given an OJS priority (0 and negative too) is prioritized higher first; one given none keeps BullMQ's none", async function () {
    const ids: Record<string, string> = {};
    for (const [name, priority] of [
      ['none', undefined],
      ['zero', 0],
      ['low', -5],
      ['high', 50],
    ] as const) {
      ids[name] = (await backend.enqueue({ type: 'a', args: { name }, ...(priority === undefined ? {} : { priority }) })).job.id;
    }
    const bull = async (name: string) => (await backend.queue().getJob(ids[name]!))!.priority;
    expect([await bull('none'), await bull('high'), await bull('zero'), await bull('low')]).to.deep.equal([
      0, 999_950, 1_000_000, 1_000_005,
    ]);
    expect((await backend.getJob(ids.low!))!.priority).to.equal(-5);
    expect((await backend.getJob(ids.none!))!.priority).to.equal(0);
  });

  it('cancel: a waiting job becomes a cancelled archive; a terminal one is an invalid transition; an unknown id is not found', async function () {
    const { job } = await backend.enqueue({ type: 'a', args: {} });
    expect(await backend.cancel(job.id)).to.include({ id: job.id, state: 'cancelled' });
    expect(await backend.queue().getJobCounts('wait')).to.deep.equal({ wait: 0 });
    expect(await rejection(backend.cancel(job.id))).to.be.instanceOf(InvalidTransitionError);
    expect(await rejection(backend.cancel(randomUUID()))).to.be.instanceOf(JobNotFoundError);
  });

  it('cancel of an active job: the job is cancelled and its worker can no longer finish it', async function () {
    const { job } = await backend.enqueue({ type: 'a', args: {}, unique: {} });
    const worker = new Worker('default', null, { connection: ctx.redis, prefix: ctx.prefix, autorun: false });
    ctx.closeLater(worker);
    const taken = (await worker.getNextJob('token', { block: false }))!;
    expect((await backend.getJob(job.id))?.state).to.equal('active');
    expect(await backend.cancel(job.id)).to.include({ state: 'cancelled' });
    expect(await rejection(taken.moveToCompleted('done', 'token', false))).to.be.instanceOf(Error);
    expect((await backend.getJob(job.id))?.state).to.equal('cancelled');
    expect(await backend.queue().getJobCounts('active', 'completed')).to.deep.equal({ active: 0, completed: 0 });
  });

  describe('cancel of a flow child (made by a plain FlowProducer)', function () {
    const releases = flowScriptsProblem() === null;
    /** Two plain flows: `one` with a single child, `two` with two; the backend knows the children's queue. */
    async function flows() {
      const producer = new FlowProducer({ connection: ctx.redis, prefix: ctx.prefix });
      ctx.closeLater(producer);
      backend.queue('c');
      const one = await producer.add({ name: 'parent', queueName: 'p', children: [{ name: 'a', queueName: 'c' }] });
      const two = await producer.add({
        name: 'parent',
        queueName: 'p',
        children: [
          { name: 'a', queueName: 'c' },
          { name: 'b', queueName: 'c' },
        ],
      });
      const key = (queue: string, id: string | undefined) => `${ctx.prefix}:${queue}:${id!}`;
      const pending = async (node: JobNode) => (await ctx.redis.smembers(`${key('p', node.job.id)}:dependencies`)).sort();
      const state = (node: JobNode) => ctx.queue('p').getJobState(node.job.id!);
      const childKeys = (node: JobNode) => node.children!.map((child) => key('c', child.job.id)).sort();
      return { one, two, pending, state, childKeys };
    }

    (releases ? it : it.skip)(
      "leaves its parent's dependencies; the parent goes to wait when it was the last pending child, and keeps waiting for the others",
      async function () {
        const { one, two, pending, state, childKeys } = await flows();
        expect(await backend.cancel(one.children![0]!.job.id!)).to.include({ id: one.children![0]!.job.id, state: 'cancelled' });
        expect(await pending(one)).to.deep.equal([]);
        expect(await state(one)).to.equal('waiting');
        const [kept] = childKeys(two).filter((childKey) => !childKey.endsWith(`:${two.children![0]!.job.id}`));
        expect(await backend.cancel(two.children![0]!.job.id!)).to.include({ state: 'cancelled' });
        expect(await pending(two)).to.deep.equal([kept]);
        expect(await state(two)).to.equal('waiting-children');
        expect(await ctx.queue('c').getJobCounts('wait')).to.deep.equal({ wait: 1 });
        expect(await ctx.queue('p').getJobCounts('wait', 'waiting-children')).to.deep.equal({ wait: 1, 'waiting-children': 1 });
      },
    );

    (releases ? it.skip : it)(
      "on a BullMQ without BullMQ's release step (6.0.0): the child is cancelled, its parent keeps waiting for it (as before flows had unique nodes)",
      async function () {
        const { one, pending, state, childKeys } = await flows();
        expect(await backend.cancel(one.children![0]!.job.id!)).to.include({ state: 'cancelled' });
        expect(await pending(one)).to.deep.equal(childKeys(one));
        expect(await state(one)).to.equal('waiting-children');
      },
    );
  });

  it("getJob and cancel never take BullMQ's own keys for jobs: meta, events, id, ojs:index, an archive", async function () {
    const { job } = await backend.enqueue({ type: 'a', args: {}, unique: {} });
    await backend.cancel((await backend.enqueue({ type: 'b', args: {} })).job.id);
    const base = `${ctx.prefix}:default:`;
    const keys = await ctx.redis.keys(`${base}*`);
    expect(keys).to.include.members([`${base}meta`, `${base}events`, `${base}marker`]);
    const archive = keys.find((key) => key.startsWith(`${base}ojs:cancelled:`))!.slice(base.length);
    for (const id of ['meta', 'events', 'marker', 'wait', 'id', 'ojs:index', archive, `${job.id}:lock`, '']) {
      expect(await backend.getJob(id), id).to.equal(null);
      expect(await rejection(backend.cancel(id)), id).to.be.instanceOf(JobNotFoundError);
    }
    expect(await ctx.redis.keys(`${base}*`)).to.have.members(keys);
    const duplicate = await rejection(backend.enqueue({ type: 'a', args: {}, unique: { on_conflict: 'reject' } }));
    expect(duplicate).to.have.property('code', 'duplicate');
  });

  it('refuses ids BullMQ cannot take, and an id that exists, as invalid_request on id', async function () {
    for (const id of ['123', 'a:b', '0']) {
      const error = await rejection(backend.enqueue({ type: 'a', args: {}, id, unique: {} }));
      expect(error, id).to.be.instanceOf(InvalidJobInputError);
      expect((error as unknown as InvalidJobInputError).issues[0]!.path).to.equal('id');
    }
    await backend.enqueue({ type: 'a', args: {}, id: 'order-1' });
    expect(await rejection(backend.enqueue({ type: 'b', args: {}, id: 'order-1' }))).to.be.instanceOf(InvalidJobInputError);
    expect(await rejection(backend.enqueue({ type: 'b', args: {}, id: 'order-1', unique: {} }))).to.be.instanceOf(InvalidJobInputError);
    expect(await rejection(backend.enqueue({ type: 'b', queue: 'other', args: {}, id: 'order-1', unique: {} }))).to.be.instanceOf(
      InvalidJobInputError,
    );
  });

  it('concurrent enqueues of one caller-chosen id in different queues, with or without a policy: one job gets it', async function () {
    const results = await Promise.allSettled([
      backend.enqueue({ type: 'a', args: {}, id: 'job-x' }),
      backend.enqueue({ type: 'b', queue: 'q2', args: {}, id: 'job-x' }),
      backend.enqueue({ type: 'c', queue: 'q1', args: {}, id: 'job-x', unique: { keys: ['type'] } }),
      backend.enqueue({ type: 'd', queue: 'q2', args: {}, id: 'job-x', unique: { keys: ['type', 'queue'] } }),
    ]);
    const created = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value.job] : []));
    expect(created).to.have.length(1);
    for (const r of results) if (r.status === 'rejected') expect((r.reason as InvalidJobInputError).issues[0]).to.include({ path: 'id' });
    expect(await backend.getJob('job-x')).to.include({ type: created[0]!.type, queue: created[0]!.queue });
    let total = 0;
    for (const name of ['default', 'q1', 'q2']) total += Object.values(await backend.queue(name).getJobCounts()).reduce((x, y) => x + y, 0);
    expect(total).to.equal(1);
  });

  it("a cancelled archive expires by the job's own policy: kept for good when it checks cancelled without a period; a replaced one after the retention", async function () {
    const short = createBullMQBackend({ connection: ctx.redis, prefix: ctx.prefix, cancelledRetentionMs: 200 });
    ctx.closeLater(short);
    const blocking = { keys: ['type'], states: ['available', 'cancelled'] } as const;
    const { job } = await short.enqueue({ type: 'sync', args: {}, unique: blocking });
    await short.cancel(job.id);
    const archive = (id: string) => `${ctx.prefix}:default:ojs:cancelled:${id}`;
    expect(await ctx.redis.pttl(archive(job.id))).to.equal(-1);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(await rejection(short.enqueue({ type: 'sync', args: {}, unique: blocking }))).to.include({
      existingJobId: job.id,
      existingJobState: 'cancelled',
    });
    // Replace: a replaced job is superseded, counted by no policy again (docs/decisions.md), so its
    // archive stays for the retention alone, whatever its own policy counted.
    const own = await short.enqueue({ type: 'sync2', args: {}, unique: blocking });
    await short.enqueue({ type: 'sync2', args: {}, unique: { keys: ['type'], on_conflict: 'replace' } });
    expect(await ctx.redis.pttl(archive(own.job.id))).to.be.within(1, 200);
    const plain = await short.enqueue({ type: 'sync3', args: {}, unique: { keys: ['type'] } });
    await short.enqueue({ type: 'sync3', args: {}, unique: { ...blocking, on_conflict: 'replace' } });
    expect(await ctx.redis.pttl(archive(plain.job.id))).to.be.within(1, 200);
    // With a period: at least until the job's window closes.
    const windowed = await short.enqueue({ type: 'sync4', args: {}, unique: { ...blocking, period: 'PT1H' } });
    await short.cancel(windowed.job.id);
    expect(await ctx.redis.pttl(archive(windowed.job.id))).to.be.within(3_500_000, 3_600_000);
  });

  it('another backend on the same prefix (another process) finds the jobs and their cancelled records', async function () {
    const { job: first } = await backend.enqueue({ type: 'a', queue: 'q1', args: {}, unique: { on_conflict: 'replace' } });
    const replaced = await backend.enqueue({ type: 'a', queue: 'q1', args: {}, unique: { on_conflict: 'replace' } });
    const other = createBullMQBackend({ connection: ctx.connect(), prefix: ctx.prefix });
    ctx.closeLater(other);
    expect(await other.getJob(first.id)).to.include({ state: 'cancelled', replaced_by: replaced.job.id, queue: 'q1' });
    expect(await other.getJob(replaced.job.id)).to.include({ state: 'available' });
  });
});
