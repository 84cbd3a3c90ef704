/**
 * The seams of `withUniqueness(queue)` a user reaches first: chaining, the jobs it hands out,
 * method identity, `unique: null`, and BullMQ options refused as typed input errors before any
 * I/O. Real Redis.
 */
import { Job, Queue } from 'bullmq';
import { expect } from 'chai';
import { withUniqueness, type UniqueQueue } from '../../adapters/bullmq/index.js';
import { DuplicateJobError, InvalidJobInputError, isInvalidJobInputError } from '../../src/index.js';
import { rejection } from '../conformance/suite-context.js';
import { useRedisPrefix } from './bullmq-test-redis.js';

describe('bullmq adapter: withUniqueness seams', function () {
  this.timeout(20_000);
  const ctx = useRedisPrefix('bullmq-wrapper-seams.test.ts');

  /** `job.queue` (protected in BullMQ's types, public at run time: what `job.remove()` and friends use). */
  const queueOf = (job: Job): UniqueQueue => (job as unknown as { queue: UniqueQueue }).queue;

  /** The same job added again through `via`: a duplicate when `via` is the wrapper, a second job when it is the bare queue. */
  async function addsStayUnique(via: { add: UniqueQueue['add'] }, wrapped: UniqueQueue): Promise<void> {
    const before = await wrapped.count();
    const error = await rejection(via.add('report', { n: 1 }, { unique: { keys: ['type'] } }));
    expect(error).to.be.instanceOf(DuplicateJobError);
    expect(await wrapped.count()).to.equal(before);
  }

  it('§8.1 a chained on()/once()/off() returns the wrapper, so a chained unique add keeps its policy', async function () {
    const queue = withUniqueness(ctx.queue('mail'));
    const listener = (): void => {};
    const chained = queue.on('error', listener).once('cleaned', listener).off('cleaned', listener).setMaxListeners(20);
    expect(chained).to.equal(queue);
    await chained.add('report', { n: 1 }, { unique: { keys: ['type'] } });
    await addsStayUnique(chained, queue);
  });

  it('§8.1 a job the wrapper hands out refers to the wrapper: created, deduplicated, replaced, addBulk, getJob, getJobs', async function () {
    const queue = withUniqueness(ctx.queue('mail'));
    const created = await queue.add('report', { n: 1 }, { unique: { keys: ['type'], on_conflict: 'ignore' } });
    const deduplicated = await queue.add('report', { n: 2 }, { unique: { keys: ['type'], on_conflict: 'ignore' } });
    expect(deduplicated.unique?.outcome).to.equal('deduplicated');
    const fetched = (await queue.getJob(created.id!))!;
    const listed = await queue.getJobs(['wait']);
    const [bulk] = await queue.addBulk([{ name: 'report', data: { n: 3 }, opts: { unique: { keys: ['type'], on_conflict: 'ignore' } } }]);
    const plain = await queue.add('plain', {});
    for (const job of [created, deduplicated, fetched, bulk!, plain, ...listed]) {
      expect(queueOf(job), job.name).to.equal(queue);
      expect(queueOf(job)).to.not.equal(queue.unwrapped);
    }
    await addsStayUnique(queueOf(created), queue);

    const replaced = await queue.add('report', { n: 4 }, { unique: { keys: ['type'], on_conflict: 'replace' } });
    expect(replaced.unique?.outcome).to.equal('replaced');
    expect(queueOf(replaced)).to.equal(queue);
  });

  it('§8.1 a job deduplicated across queues refers to a wrapped queue of its own queue', async function () {
    const a = withUniqueness(ctx.queue('a'));
    const b = withUniqueness(ctx.queue('b'));
    const first = await a.add('sync', {}, { unique: { on_conflict: 'ignore' } });
    const seen = await b.add('sync', {}, { unique: { on_conflict: 'ignore' } });
    expect(seen.id).to.equal(first.id);
    const owner = queueOf(seen);
    expect(owner.name).to.equal('a');
    expect(owner.unwrapped).to.be.instanceOf(Queue);
    // A unique add through it is still unique.
    expect((await owner.add('sync', {}, { unique: { on_conflict: 'ignore' } })).unique?.outcome).to.equal('deduplicated');
    await b.close();
  });

  it("§8.1 methods keep their identity across reads, and the user's queue object is never patched", async function () {
    const raw = ctx.queue('mail');
    const before = Object.getOwnPropertyNames(raw).sort();
    const ownAdd = raw.add;
    const queue = withUniqueness(raw);
    expect(queue.getJob).to.equal(queue.getJob);
    expect(queue.on).to.equal(queue.on);
    expect(queue.add).to.equal(queue.add);
    await queue.add('x', {}, { unique: {} });
    queue.on('error', () => {});
    expect(Object.getOwnPropertyNames(raw).sort()).to.deep.equal(before);
    expect(raw.add).to.equal(ownAdd);
    expect(raw.add).to.equal(Queue.prototype.add);
    expect(queue).to.be.instanceOf(Queue);
  });

  it('§5.1 a duplicate of a job whose id reads like a Redis Cluster error is a DuplicateJobError, probed or not', async function () {
    for (const duplicateProbe of [true, false]) {
      const queue = withUniqueness(ctx.queue(`cluster-like-${duplicateProbe}`), { duplicateProbe });
      const policy = { keys: ['type', 'args'] } as const;
      const data = { probe: duplicateProbe };
      await queue.add('x', data, { unique: policy, jobId: `cross-slot-MOVED-${duplicateProbe}` });
      for (let i = 0; i < 2; i++) {
        const error = await rejection(queue.add('x', data, { unique: policy }));
        expect(error, `duplicateProbe: ${duplicateProbe}`).to.be.instanceOf(DuplicateJobError);
        expect(error.existingJobId).to.equal(`cross-slot-MOVED-${duplicateProbe}`);
      }
    }
  });

  it('§2.2 unique: null is no policy: a plain add (and addBulk entry), nothing of the adapter stored', async function () {
    const queue = withUniqueness(ctx.queue('mail'));
    const first = await queue.add('x', { a: 1 }, { unique: null });
    const second = await queue.add('x', { a: 1 }, { unique: null });
    const [third] = await queue.addBulk([{ name: 'x', data: { a: 1 }, opts: { unique: null } }]);
    expect([first.unique, second.unique, third!.unique]).to.deep.equal([undefined, undefined, undefined]);
    expect(await queue.count()).to.equal(3);
    expect(await ctx.redis.keys(`${ctx.prefix}:*ojs:*`)).to.deep.equal([]);
    expect(JSON.parse((await ctx.redis.hget(`${ctx.prefix}:mail:${first.id}`, 'opts'))!)).to.not.have.property('unique');
    // With ojsMeta it asks for a policy and there is none: refused.
    const error = await rejection(queue.add('x', {}, { unique: null, ojsMeta: { a: 1 } }));
    expect(error).to.be.instanceOf(InvalidJobInputError);
  });

  it('§2.2 BullMQ options it would refuse or mis-store are typed errors naming the option, before any I/O', async function () {
    const queue = withUniqueness(ctx.queue('mail'));
    const cases: [Record<string, unknown>, string][] = [
      [{ jobId: 42 }, 'opts.jobId'],
      [{ jobId: '42' }, 'opts.jobId'],
      [{ jobId: 'a:b' }, 'opts.jobId'],
      [{ jobId: '0' }, 'opts.jobId'],
      [{ priority: Number.NaN }, 'opts.priority'],
      [{ priority: -1 }, 'opts.priority'],
      [{ priority: 2 ** 21 }, 'opts.priority'],
      [{ priority: 1.5 }, 'opts.priority'],
      [{ delay: -1 }, 'opts.delay'],
      [{ delay: Number.NaN }, 'opts.delay'],
      [{ delay: 1.5 }, 'opts.delay'],
      [{ delay: 9e15 }, 'opts.delay'],
      [{ attempts: -1 }, 'opts.attempts'],
      [{ attempts: Number.POSITIVE_INFINITY }, 'opts.attempts'],
      [{ backoff: { type: 'fixed', delay: 10, jitter: 2 } }, 'opts.backoff.jitter'],
      [{ failParentOnFailure: true, ignoreDependencyOnFailure: true }, 'opts.ignoreDependencyOnFailure'],
      [{ sizeLimit: 4 }, 'opts.sizeLimit'],
    ];
    for (const [opts, path] of cases) {
      for (const attempt of [
        queue.add('x', { payload: 'more than four bytes' }, { ...opts, unique: {} }),
        queue.addBulk([{ name: 'x', data: { payload: 'more than four bytes' }, opts: { ...opts, unique: {} } }]),
      ]) {
        const error = await rejection(attempt);
        expect(error, JSON.stringify(opts)).to.be.instanceOf(InvalidJobInputError);
        expect(
          (error as unknown as InvalidJobInputError).issues.map((issue) => issue.path),
          JSON.stringify(opts),
        ).to.include(path);
      }
    }
    // A plain entry of a mixed batch that BullMQ's own check refuses: typed too, the batch not sent.
    const error = await rejection(
      queue.addBulk([
        { name: 'x', data: {}, opts: { unique: {} } },
        { name: 'y', data: {}, opts: { jobId: '7' } },
      ]),
    );
    expect(error).to.be.instanceOf(InvalidJobInputError);
    expect((error as unknown as InvalidJobInputError).issues[0]!.path).to.equal('[1].opts');
    expect(await ctx.redis.keys(`${ctx.prefix}:*`)).to.deep.equal([]);
  });

  it('valid BullMQ options still pass: priority, delay, attempts, a custom jobId', async function () {
    const queue = withUniqueness(ctx.queue('mail'));
    const job = await queue.add('x', {}, { unique: {}, priority: 2 ** 21 - 1, delay: 60_000, attempts: 5, jobId: 'order-17' });
    expect(job).to.be.instanceOf(Job);
    expect(job.id).to.equal('order-17');
    expect(await queue.getJobCounts('delayed')).to.deep.equal({ delayed: 1 });
  });

  it("§2.2 a unique add's jobId follows the OJS id rules: a three-part BullMQ id is refused, naming opts.jobId, nothing written", async function () {
    const queue = withUniqueness(ctx.queue('mail'));
    const error = await queue.add('x', {}, { unique: {}, jobId: 'a:b:c' }).then(
      () => expect.fail('resolved'),
      (failure: unknown) => failure,
    );
    expect(isInvalidJobInputError(error)).to.equal(true);
    expect((error as InvalidJobInputError).issues.map((issue) => issue.path)).to.deep.equal(['opts.jobId']);
    expect(await ctx.redis.keys(`${ctx.prefix}:mail:a:b:c*`)).to.deep.equal([]);
  });
});
