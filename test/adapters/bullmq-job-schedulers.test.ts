/**
 * Job schedulers with a `unique` template: the wrapped queue's `upsertJobScheduler` schedules
 * relay jobs, and `makeUniqueSchedulerProcessor` adds each tick's real job through the unique
 * path. A real Worker and a short `every`. Real Redis.
 */
import { expect } from 'chai';
import { Worker, type Job } from 'bullmq';
import { makeUniqueSchedulerProcessor, UNIQUE_SCHEDULER_JOB_NAME, withUniqueness, type RelayResult } from '../../adapters/bullmq/index.js';
import { isInvalidJobInputError } from '../../src/index.js';
import { rejection } from '../conformance/suite-context.js';
import { useRedisPrefix } from './bullmq-test-redis.js';

const FILE = 'bullmq-job-schedulers.test.ts';

describe('bullmq adapter: job schedulers with a unique template', function () {
  this.timeout(30_000);
  const ctx = useRedisPrefix(FILE);

  it('every tick adds its job through the policy: while one runs, the next ticks are deduplicated', async () => {
    const queue = withUniqueness(ctx.queue('sync'));
    const unique = { keys: ['type', 'queue'], on_conflict: 'ignore' } as const;
    const first = await queue.upsertJobScheduler('sync-every', { every: 150 }, { name: 'sync', data: { full: true }, opts: { unique } });
    expect(first.name).to.equal(UNIQUE_SCHEDULER_JOB_NAME);

    let release!: () => void;
    const running = new Promise<void>((resolve) => (release = resolve));
    const realJobs: Job[] = [];
    const relays: RelayResult[] = [];
    let dedupedWhileRunning!: () => void;
    const enough = new Promise<void>((resolve) => (dedupedWhileRunning = resolve));
    const worker = new Worker(
      'sync',
      makeUniqueSchedulerProcessor(queue, async (job) => {
        realJobs.push(job);
        await running;
        return 'done';
      }),
      { connection: ctx.connect(), prefix: ctx.prefix, concurrency: 4 },
    );
    ctx.closeLater(worker);
    worker.on('completed', (job, result) => {
      if (job.name !== UNIQUE_SCHEDULER_JOB_NAME) return;
      relays.push(result as RelayResult);
      if (relays.filter((relay) => relay.outcome === 'deduplicated').length >= 3) dedupedWhileRunning();
    });
    await enough;
    try {
      expect(realJobs).to.have.length(1);
      expect(realJobs[0]!.data).to.deep.equal({ full: true });
      // Relays run 4 at a time: their `completed` events need not come in the order of their adds.
      const created = relays.filter((relay) => relay.outcome === 'created');
      expect(created).to.deep.equal([{ outcome: 'created', jobId: realJobs[0]!.id }]);
      for (const relay of relays.filter((relay) => relay.outcome !== 'created')) {
        expect(relay).to.deep.equal({ outcome: 'deduplicated', jobId: realJobs[0]!.id });
      }
    } finally {
      release();
      await queue.removeJobScheduler('sync-every');
    }
  });

  it('a relay run again after its add went through (a retry, a stalled job) reports its job, never replaces or rejects it', async () => {
    const raw = ctx.queue('sync');
    const queue = withUniqueness(raw);
    for (const onConflict of ['replace', 'reject'] as const) {
      const relayJob = await queue.upsertJobScheduler(
        `s-${onConflict}`,
        { every: 60_000 },
        {
          name: `sync-${onConflict}`,
          opts: { unique: { keys: ['type', 'queue'], on_conflict: onConflict } },
        },
      );
      const processor = makeUniqueSchedulerProcessor(queue, async () => 'not a relay');
      const first = (await processor(relayJob, 'token')) as RelayResult;
      expect(first.outcome).to.equal('created');
      expect(await processor(relayJob, 'token')).to.deep.equal(first);
      const added = await raw.getJob(first.jobId);
      expect(await added!.getState()).to.equal('waiting');
      expect((await raw.getWaiting()).filter((job) => job.name === `sync-${onConflict}`).map((job) => job.id)).to.deep.equal([first.jobId]);
      await queue.removeJobScheduler(`s-${onConflict}`);
    }
  });

  it('a bad policy is refused at upsert, naming the template field; a template without unique is BullMQ’s own', async () => {
    const queue = withUniqueness(ctx.queue('sync'));
    const error = await rejection(
      queue.upsertJobScheduler('s', { every: 1000 }, { name: 'n', opts: { unique: { on_conflict: 'nope' as never } } }),
    );
    expect(isInvalidJobInputError(error) && error.issues.map((issue) => issue.path)).to.deep.equal(['jobTemplate.opts.unique.on_conflict']);
    expect(await queue.getJobSchedulersCount()).to.equal(0);
    const plain = await queue.upsertJobScheduler('p', { every: 60_000 }, { name: 'n', data: { a: 1 } });
    expect(plain.name).to.equal('n');
  });
});
