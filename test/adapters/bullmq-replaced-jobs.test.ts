/**
 * A replaced BullMQ job found from the job that replaced it (`getReplacedJobs`, on the wrapper and
 * the backend): the replacer's `ojsReplaced` names the superseded jobs, each read where it is now
 * (a cancelled one from its archive, a finished one as it is), across queues; one whose archive
 * expired is left out. Real Redis.
 */
import { expect } from 'chai';
import { Worker } from 'bullmq';
import { createBullMQBackend, withUniqueness, type UniqueJob } from '../../adapters/bullmq/index.js';
import { useRedisPrefix } from './bullmq-test-redis.js';

const FILE = 'bullmq-replaced-jobs.test.ts';

describe('bullmq adapter: replaced jobs found from their replacer', function () {
  this.timeout(20_000);
  const ctx = useRedisPrefix(FILE);
  const replace = { keys: ['type'], on_conflict: 'replace', states: ['available', 'scheduled', 'completed'] } as const;

  it('withUniqueness getReplacedJobs: the cancelled one from its archive, the finished one as it is, across queues', async () => {
    const mail = withUniqueness(ctx.queue('mail'));
    const sms = withUniqueness(ctx.queue('sms'));
    const done = await mail.add('notify', { v: 1 }, { unique: replace, jobId: 'notify-1' });
    const worker = new Worker('mail', null, { connection: ctx.connect(), prefix: ctx.prefix, autorun: false });
    ctx.closeLater(worker);
    const next = (await worker.getNextJob('token', { block: false }))!;
    await next.moveToCompleted('done', 'token', false);
    // Another queue: the policy has no `queue` dimension, so the key spans them.
    const waiting = await sms.add('notify', { v: 2 }, { unique: { ...replace, states: ['available', 'scheduled'] } });
    const replacing = (await mail.add('notify', { v: 3 }, { unique: replace })) as UniqueJob;
    expect(replacing.unique!.outcome).to.equal('replaced');
    expect(await sms.getJob(waiting.id!), "BullMQ's getJob no longer finds the cancelled one").to.equal(undefined);

    const found = await mail.getReplacedJobs(replacing.id!);
    expect(found.map((job) => [job.id, job.queueName, job.ojsState, job.data])).to.deep.equal([
      [done.id, 'mail', 'completed', { v: 1 }],
      [waiting.id, 'sms', 'cancelled', { v: 2 }],
    ]);
    expect(await mail.getReplacedJobs(done.id!), 'a job that replaced nothing').to.deep.equal([]);
    expect(await mail.getReplacedJobs('no-such-job')).to.deep.equal([]);

    const backend = createBullMQBackend({ connection: ctx.redis, prefix: ctx.prefix });
    ctx.closeLater(backend);
    const views = await backend.getReplacedJobs(replacing.id!);
    expect(views.map((job) => [job.id, job.state, job.replaced_by])).to.deep.equal([
      [done.id, 'completed', undefined],
      [waiting.id, 'cancelled', replacing.id],
    ]);

    // An archive past its retention is gone: left out.
    await ctx.redis.del(`${ctx.prefix}:sms:ojs:cancelled:${waiting.id}`);
    expect((await backend.getReplacedJobs(replacing.id!)).map((job) => job.id)).to.deep.equal([done.id]);

    // The finished one removed, and its id taken by a job of no key: another job, left out.
    await (await ctx.queue('mail').getJob(done.id!))!.remove();
    await ctx.queue('mail').add('other', { v: 4 }, { jobId: done.id! });
    expect(await backend.getReplacedJobs(replacing.id!)).to.deep.equal([]);
  });
});
