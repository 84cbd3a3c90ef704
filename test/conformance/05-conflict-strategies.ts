import { expect } from 'chai';
import { isDuplicateJobError, isInvalidJobInputError, type OjsJob } from '../../src/index.js';
import { created, enqueue, rejection, run, stateOf, type SuiteContext } from './suite-context.js';

const HOUR = 3_600_000;
const ALL_LIVE = ['available', 'active', 'scheduled', 'retryable', 'pending'] as const;

export function conflictStrategies(ctx: SuiteContext): void {
  describe('§5 conflict strategies', function () {
    it('§5.1 §14.1 reject: the duplicate is refused with code "duplicate", the existing id, state and key', async function () {
      const unique = { keys: ['type', 'args'], on_conflict: 'reject' } as const;
      const first = await created(ctx, { type: 'email.send', args: { user_id: 42 }, unique });
      const error = await rejection(enqueue(ctx, { type: 'email.send', args: { user_id: 42 }, unique }));
      expect(isDuplicateJobError(error)).to.equal(true);
      expect(error).to.include({
        code: 'duplicate',
        existingJobId: first.id,
        existingJobState: 'available',
        uniquenessKey: first.uniqueness_key,
      });
      expect(JSON.parse(JSON.stringify(error))).to.deep.equal({
        error: {
          code: 'duplicate',
          message: error.message,
          retryable: false,
          details: {
            existing_job_id: first.id,
            existing_job_state: 'available',
            uniqueness_key: first.uniqueness_key,
            reason: 'duplicate',
          },
        },
      });
      expect(error.message, 'the key never appears in a message (§12)').to.not.contain(first.uniqueness_key!);
      expect(await stateOf(ctx, first.id)).to.equal('available');
    });

    it('§5.4 §14.7 ignore: returns the original job, deduplicated, and inserts nothing', async function () {
      const unique = { keys: ['type', 'args'], on_conflict: 'ignore' } as const;
      const first = await created(ctx, { type: 'invoice.generate', args: { order_id: 'o1' }, unique });
      const second = await enqueue(ctx, { type: 'invoice.generate', args: { order_id: 'o1' }, unique });
      expect(second.outcome).to.equal('deduplicated');
      expect(second.job.id).to.equal(first.id);
      expect(second.job.state).to.equal('available');
      // Nothing new was inserted: a reject probe still finds the original as the only holder.
      const probe = await rejection(
        enqueue(ctx, { type: 'invoice.generate', args: { order_id: 'o1' }, unique: { ...unique, on_conflict: 'reject' } }),
      );
      expect(probe.existingJobId).to.equal(first.id);
    });

    // The id check comes first: a caller-chosen id that already names a job is bad input whatever
    // the policy would answer, even when that job is the very duplicate (so the add is not a
    // duplicate outcome on one backend and invalid_request on another).
    for (const [section, onConflict] of [
      ['§5.1', 'reject'],
      ['§5.4', 'ignore'],
    ] as const) {
      it(`${section} ${onConflict}: a caller-chosen id taken by the very job the add duplicates is invalid_request naming the id, nothing written`, async function () {
        const unique = { keys: ['type', 'args'], on_conflict: onConflict } as const;
        const first = await created(ctx, { type: 'order.sync', id: 'order-7', args: { order_id: 7 }, unique });
        await expectIdTaken(enqueue(ctx, { type: 'order.sync', id: 'order-7', args: { order_id: 7 }, unique }));
        // Nothing was inserted: the original is still the key's only holder.
        const probe = await rejection(
          enqueue(ctx, { type: 'order.sync', args: { order_id: 7 }, unique: { ...unique, on_conflict: 'reject' } }),
        );
        expect(probe.existingJobId).to.equal(first.id);
      });

      it(`${section} ${onConflict}: a caller-chosen id naming a cancelled duplicate the policy counts is invalid_request naming the id`, async function () {
        const unique = { keys: ['type'], states: ['available', 'cancelled'], on_conflict: onConflict } as const;
        const first = await created(ctx, { type: 'order.cancelled', id: 'order-8', args: {}, unique });
        expect((await ctx.subject.backend.cancel(first.id)).state).to.equal('cancelled');
        await expectIdTaken(enqueue(ctx, { type: 'order.cancelled', id: 'order-8', args: {}, unique }));
        expect(await stateOf(ctx, first.id)).to.equal('cancelled');
      });
    }

    it("§5.1 reject: an empty caller-chosen id is invalid_request naming the id, not the duplicate of the key's job", async function () {
      const unique = { keys: ['type'] } as const;
      await created(ctx, { type: 'order.empty-id', args: {}, unique });
      await expectIdTaken(enqueue(ctx, { type: 'order.empty-id', id: '', args: {}, unique }));
    });

    it('§5.2 §14.6 replace: the original is cancelled and the new job is enqueued in its place', async function () {
      const unique = { keys: ['type', 'args'], args_keys: ['user_id'], on_conflict: 'replace' } as const;
      const first = await created(ctx, { type: 'resize.avatar', args: { user_id: 42, url: 'old.jpg' }, unique });
      const result = await enqueue(ctx, { type: 'resize.avatar', args: { user_id: 42, url: 'new.jpg' }, unique });
      expect(result.outcome).to.equal('replaced');
      if (result.outcome !== 'replaced') return;
      expect(result.replaced.id).to.equal(first.id);
      expect(result.replaced.state).to.equal('cancelled');
      expect(result.job.id).to.not.equal(first.id);
      expect(result.job.args).to.deep.equal({ user_id: 42, url: 'new.jpg' });
      expect(result.job.state).to.equal('available');
      expect(await stateOf(ctx, first.id)).to.equal('cancelled');
      // The new job now holds the key.
      const probe = await rejection(
        enqueue(ctx, { type: 'resize.avatar', args: { user_id: 42 }, unique: { ...unique, on_conflict: 'reject' } }),
      );
      expect(probe.existingJobId).to.equal(result.job.id);
    });

    it('§5.2 replace meeting an active job: rejected with state "active" unless the backend replaces active jobs', async function () {
      const unique = { keys: ['type'], on_conflict: 'replace' } as const;
      const first = await created(ctx, { type: 'report.daily', args: { v: 1 }, unique, max_attempts: 1 });
      const attempt = await ctx.subject.start(first.id);
      try {
        if (ctx.subject.backend.capabilities.unique_jobs.replace_active) {
          const result = await enqueue(ctx, { type: 'report.daily', args: { v: 2 }, unique });
          expect(result.outcome).to.equal('replaced');
          expect(await stateOf(ctx, first.id)).to.equal('cancelled');
        } else {
          const error = await rejection(enqueue(ctx, { type: 'report.daily', args: { v: 2 }, unique }));
          expect(error).to.include({
            code: 'duplicate',
            existingJobId: first.id,
            existingJobState: 'active',
            reason: 'active_not_replaceable',
          });
          expect(await stateOf(ctx, first.id)).to.equal('active');
        }
      } finally {
        await attempt.complete().catch(() => undefined);
      }
    });

    it('§5.3 replace_except_schedule: a scheduled job is replaced with the new args and keeps its time', async function () {
      const unique = { keys: ['type', 'args'], args_keys: ['user_id'], on_conflict: 'replace_except_schedule' } as const;
      const original = new Date(Date.now() + 2 * HOUR);
      const first = await created(ctx, { type: 'digest.send', args: { user_id: 42, items: [1] }, scheduled_at: original, unique });
      expect(first.state).to.equal('scheduled');
      const result = await enqueue(ctx, {
        type: 'digest.send',
        args: { user_id: 42, items: [1, 2] },
        scheduled_at: new Date(Date.now() + 3 * HOUR),
        unique,
      });
      expect(result.outcome).to.equal('replaced');
      expect(result.job.args).to.deep.equal({ user_id: 42, items: [1, 2] });
      expect(Date.parse(result.job.scheduled_at)).to.equal(Date.parse(first.scheduled_at));
      expect(result.job.state).to.equal('scheduled');
      expect(await stateOf(ctx, first.id)).to.equal('cancelled');
    });

    it('§5.3 replace_except_schedule on a job that is not scheduled behaves as replace', async function () {
      const unique = { keys: ['type'], on_conflict: 'replace_except_schedule' } as const;
      const first = await created(ctx, { type: 'notification.send', args: { m: 'a' }, unique });
      const later = new Date(Date.now() + HOUR);
      const result = await enqueue(ctx, { type: 'notification.send', args: { m: 'b' }, scheduled_at: later, unique });
      expect(result.outcome).to.equal('replaced');
      expect(Math.abs(Date.parse(result.job.scheduled_at) - later.getTime())).to.be.below(1000);
      expect(result.job.state).to.equal('scheduled');
      expect(await stateOf(ctx, first.id)).to.equal('cancelled');
    });

    it('§5 with several duplicates, the first inserted is "the existing job" and replace cancels them all', async function () {
      // Narrow policies let two jobs of one key coexist: one available, one scheduled.
      const narrow = { keys: ['type'], states: ['scheduled'] } as const;
      const j1 = await created(ctx, { type: 'sync.run', args: { n: 1 }, unique: narrow });
      const j2 = await created(ctx, { type: 'sync.run', args: { n: 2 }, scheduled_at: new Date(Date.now() + HOUR), unique: narrow });
      const rejected = await rejection(enqueue(ctx, { type: 'sync.run', args: { n: 3 }, unique: { keys: ['type'] } }));
      expect(rejected).to.include({ existingJobId: j1.id, existingJobState: 'available' });
      const ignored = await enqueue(ctx, { type: 'sync.run', args: { n: 3 }, unique: { keys: ['type'], on_conflict: 'ignore' } });
      expect(ignored.job.id).to.equal(j1.id);
      const replaced = await enqueue(ctx, { type: 'sync.run', args: { n: 3 }, unique: { keys: ['type'], on_conflict: 'replace' } });
      expect(replaced.outcome).to.equal('replaced');
      if (replaced.outcome !== 'replaced') return;
      expect(replaced.replaced.id).to.equal(j1.id);
      expect((replaced.also_replaced ?? []).map((job) => job.id)).to.deep.equal([j2.id]);
      expect([await stateOf(ctx, j1.id), await stateOf(ctx, j2.id), await stateOf(ctx, replaced.job.id)]).to.deep.equal([
        'cancelled',
        'cancelled',
        'available',
      ]);
    });

    // A terminal state is never left (ojs-core §6.1): a replace whose policy counts a finished job
    // inserts the new job and takes the key from the finished one, which keeps its state and times.
    for (const [section, onConflict] of [
      ['§5.2', 'replace'],
      ['§5.3', 'replace_except_schedule'],
    ] as const) {
      for (const [finish, state] of [
        ['complete', 'completed'],
        ['cancel', 'cancelled'],
        ['fail', 'discarded'],
      ] as const) {
        it(`${section} ${onConflict} never rewrites a ${state} duplicate: it keeps its state and times, the new job is inserted and holds the key`, async function () {
          const unique = { keys: ['type'], states: [...ALL_LIVE, state], on_conflict: onConflict } as const;
          const first = await created(ctx, { type: 'invoice.generate', args: { n: 1 }, unique, max_attempts: 1 });
          const finished = finish === 'cancel' ? await ctx.subject.backend.cancel(first.id) : await run(ctx, first.id, finish);
          expect(finished.state).to.equal(state);
          const result = await enqueue(ctx, { type: 'invoice.generate', args: { n: 2 }, unique });
          expect(result.outcome).to.equal('replaced');
          if (result.outcome !== 'replaced') return;
          expect(result.job.id).to.not.equal(first.id);
          expect(result.job.state).to.equal('available');
          expect(result.also_replaced ?? []).to.deep.equal([]);
          // (Graphile Worker keeps a discarded job's row, without completed_at: unchanged is what counts.)
          const unchanged = (job: OjsJob | null) => job && [job.id, job.state, job.created_at, job.completed_at, job.replaced_by];
          expect(unchanged(result.replaced)).to.deep.equal([first.id, state, finished.created_at, finished.completed_at, undefined]);
          expect(unchanged(await ctx.subject.backend.getJob(first.id))).to.deep.equal(unchanged(result.replaced));
          // The new job holds the key: a reject of the same policy names it, not the finished one.
          const error = await rejection(
            enqueue(ctx, { type: 'invoice.generate', args: { n: 3 }, unique: { ...unique, on_conflict: 'reject' } }),
          );
          expect(error).to.include({ existingJobId: result.job.id, existingJobState: 'available' });
        });
      }
    }

    it('§5.2 x_update never updates a finished duplicate: a completed job the policy counts answers by on_conflict and keeps its args', async function () {
      if (!(ctx.subject.backend.capabilities.unique_jobs.extensions ?? []).includes('x_update')) {
        this.test!.title += ' [skipped: this entry point has no x_update]';
        this.skip();
      }
      const unique = {
        keys: ['type'],
        states: [...ALL_LIVE, 'completed'],
        on_conflict: 'ignore',
        x_update: { available: ['args'] },
      } as const;
      const first = await created(ctx, { type: 'digest.send', args: { items: 1 }, unique, max_attempts: 1 });
      const finished = await run(ctx, first.id, 'complete');
      const ignored = await enqueue(ctx, { type: 'digest.send', args: { items: 2 }, unique });
      expect(ignored.outcome).to.equal('deduplicated');
      expect(ignored.job).to.include({ id: first.id, state: 'completed', completed_at: finished.completed_at });
      // (Graphile Worker deletes a completed job's payload with its row: unchanged is what counts.)
      expect(ignored.job.args).to.deep.equal(finished.args);
      const replaced = await enqueue(ctx, { type: 'digest.send', args: { items: 3 }, unique: { ...unique, on_conflict: 'replace' } });
      expect(replaced.outcome).to.equal('replaced');
      expect(await ctx.subject.backend.getJob(first.id)).to.deep.include({
        state: 'completed',
        args: finished.args,
        completed_at: finished.completed_at,
      });
    });

    it('§5.2 replace meeting a finished and a live duplicate: names both oldest first, cancels only the live one', async function () {
      const withCompleted = { keys: ['type'], states: [...ALL_LIVE, 'completed'] } as const;
      // The key's first job, cancelled by hand: a policy without `cancelled` does not count it.
      const earliest = await created(ctx, { type: 'report.build', args: { n: 0 }, unique: { keys: ['type'] } });
      await ctx.subject.backend.cancel(earliest.id);
      const done = await created(ctx, { type: 'report.build', args: { n: 1 }, unique: withCompleted, max_attempts: 1 });
      const finished = await run(ctx, done.id, 'complete');
      const live = await created(ctx, { type: 'report.build', args: { n: 2 }, unique: { keys: ['type'] } });
      const result = await enqueue(ctx, { type: 'report.build', args: { n: 3 }, unique: { ...withCompleted, on_conflict: 'replace' } });
      expect(result.outcome).to.equal('replaced');
      if (result.outcome !== 'replaced') return;
      expect(result.replaced).to.include({ id: done.id, state: 'completed', completed_at: finished.completed_at });
      expect((result.also_replaced ?? []).map((job) => [job.id, job.state, job.replaced_by])).to.deep.equal([
        [live.id, 'cancelled', result.job.id],
      ]);
      expect(await stateOf(ctx, done.id)).to.equal('completed');
      expect(await stateOf(ctx, earliest.id)).to.equal('cancelled');
      const error = await rejection(enqueue(ctx, { type: 'report.build', args: { n: 4 }, unique: withCompleted }));
      expect(error).to.include({ existingJobId: result.job.id });
    });

    it('§5.2 a job a replace cancelled is never cancelled again, and no later add counts it', async function () {
      const unique = { keys: ['type'], states: [...ALL_LIVE, 'cancelled'], on_conflict: 'replace' } as const;
      const first = await created(ctx, { type: 'avatar.resize', args: { n: 1 }, unique });
      const second = await enqueue(ctx, { type: 'avatar.resize', args: { n: 2 }, unique });
      expect(second.outcome).to.equal('replaced');
      if (second.outcome !== 'replaced') return;
      expect(second.replaced).to.include({ id: first.id, state: 'cancelled', replaced_by: second.job.id });
      const cancelledAt = second.replaced.completed_at;
      const third = await enqueue(ctx, { type: 'avatar.resize', args: { n: 3 }, unique });
      expect(third.outcome).to.equal('replaced');
      if (third.outcome !== 'replaced') return;
      // Only the live job is met: the one cancelled before is nobody's duplicate any more.
      expect([third.replaced.id, ...(third.also_replaced ?? []).map((job) => job.id)]).to.deep.equal([second.job.id]);
      expect(await ctx.subject.backend.getJob(first.id)).to.include({
        state: 'cancelled',
        completed_at: cancelledAt,
        replaced_by: second.job.id,
      });
      const ignored = await enqueue(ctx, { type: 'avatar.resize', args: { n: 4 }, unique: { ...unique, on_conflict: 'ignore' } });
      expect(ignored.job.id).to.equal(third.job.id);
    });

    it('§5.2 replace of a scheduled job: the new job keeps its own schedule', async function () {
      const unique = { keys: ['type'], on_conflict: 'replace' } as const;
      await created(ctx, { type: 'notification.send', args: {}, scheduled_at: new Date(Date.now() + 2 * HOUR), unique });
      const result = await enqueue(ctx, { type: 'notification.send', args: {}, unique });
      expect(result.outcome).to.equal('replaced');
      expect(result.job.state).to.equal('available');
    });
  });
}

/** The typed input error for a taken (or empty) id, naming it as the entry point calls it (`id`, BullMQ's `opts.jobId`; a batch prefixes the entry). */
async function expectIdTaken(promise: Promise<unknown>): Promise<void> {
  const error = await rejection(promise);
  expect(isInvalidJobInputError(error), String(error)).to.equal(true);
  expect(error.code).to.equal('invalid_request');
  const paths = (error.issues as { path: string }[]).map((issue) => issue.path);
  expect(paths).to.have.length(1);
  expect(paths[0]).to.match(/^(\[0\]\.)?(id|opts\.jobId)$/); // addBulk and addJobs say which entry
}
