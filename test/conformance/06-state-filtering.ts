import { expect } from 'chai';
import { created, enqueue, needsVirtualClock, rejection, run, stateOf, type SuiteContext } from './suite-context.js';

const ALL_BUT_TERMINAL = ['available', 'active', 'scheduled', 'retryable', 'pending'] as const;

export function stateFiltering(ctx: SuiteContext): void {
  describe('§6 state filtering', function () {
    it('§6.1 an active job blocks under the default states', async function () {
      const unique = { keys: ['type'] } as const;
      const first = await created(ctx, { type: 'etl.run', args: {}, unique, max_attempts: 1 });
      const attempt = await ctx.subject.start(first.id);
      try {
        const error = await rejection(enqueue(ctx, { type: 'etl.run', args: {}, unique }));
        expect(error).to.include({ existingJobId: first.id, existingJobState: 'active' });
      } finally {
        await attempt.complete();
      }
    });

    it('§6.1 §14.4 a completed job does not block under the default states', async function () {
      const unique = { keys: ['type', 'args'] } as const;
      const first = await created(ctx, { type: 'report.build', args: { id: 1 }, unique });
      expect((await run(ctx, first.id, 'complete')).state).to.equal('completed');
      const second = await created(ctx, { type: 'report.build', args: { id: 1 }, unique });
      expect(second.id).to.not.equal(first.id);
    });

    it('§6.3 §14.5 with "completed" in states a completed job blocks', async function () {
      const unique = { keys: ['type', 'args'], states: [...ALL_BUT_TERMINAL, 'completed'] } as const;
      const first = await created(ctx, { type: 'email.send_welcome', args: { user_id: 42 }, unique });
      await run(ctx, first.id, 'complete');
      const error = await rejection(enqueue(ctx, { type: 'email.send_welcome', args: { user_id: 42 }, unique }));
      expect(error).to.include({ code: 'duplicate', existingJobId: first.id, existingJobState: 'completed' });
    });

    it('§6.3 with "discarded" in states a discarded job blocks; without it, it does not', async function () {
      const first = await created(ctx, { type: 'charge.card', args: { order: 1 }, unique: { keys: ['type'] }, max_attempts: 1 });
      expect((await run(ctx, first.id, 'fail')).state).to.equal('discarded');
      const error = await rejection(enqueue(ctx, { type: 'charge.card', args: {}, unique: { keys: ['type'], states: ['discarded'] } }));
      expect(error).to.include({ existingJobId: first.id, existingJobState: 'discarded' });
      await created(ctx, { type: 'charge.card', args: {}, unique: { keys: ['type'] } });
    });

    it('§6.2 a cancelled job blocks only when "cancelled" is in states', async function () {
      const first = await created(ctx, { type: 'sync.account', args: {}, unique: { keys: ['type'] } });
      expect((await ctx.subject.backend.cancel(first.id)).state).to.equal('cancelled');
      const error = await rejection(enqueue(ctx, { type: 'sync.account', args: {}, unique: { keys: ['type'], states: ['cancelled'] } }));
      expect(error).to.include({ existingJobId: first.id, existingJobState: 'cancelled' });
      await created(ctx, { type: 'sync.account', args: {}, unique: { keys: ['type'] } });
    });

    it('§6.3 a completed job stays visible to a wider policy after enqueues under narrower ones', async function () {
      // The key does not depend on states or period, so one enqueue's policy must not make a
      // backend forget a job that another policy of the same key still counts.
      const wide = { keys: ['type'], states: [...ALL_BUT_TERMINAL, 'completed'] } as const;
      const first = await created(ctx, { type: 'welcome.send', args: {}, unique: wide });
      await run(ctx, first.id, 'complete');
      const narrow = await created(ctx, { type: 'welcome.send', args: {}, unique: { keys: ['type'] } });
      await ctx.subject.backend.cancel(narrow.id);
      await created(ctx, { type: 'welcome.send', args: {}, unique: { keys: ['type'], period: 'PT1S' } });
      const error = await rejection(enqueue(ctx, { type: 'welcome.send', args: {}, unique: wide }));
      expect(error).to.include({ existingJobId: first.id, existingJobState: 'completed' });
    });

    it('§6.2 §7.1 with "cancelled" in states and no period a cancelled job blocks for good', async function () {
      needsVirtualClock(ctx, this, 'needs months to pass');
      const unique = { keys: ['type'], states: ['cancelled'] } as const;
      const first = await created(ctx, { type: 'account.close', args: {}, unique });
      await ctx.subject.backend.cancel(first.id);
      ctx.subject.clock!.advance(400 * 86_400_000);
      const error = await rejection(enqueue(ctx, { type: 'account.close', args: {}, unique }));
      expect(error).to.include({ existingJobId: first.id, existingJobState: 'cancelled' });
    });

    it('§6.4 narrow states ["scheduled"]: an available job does not block, a scheduled one does', async function () {
      const unique = { keys: ['type'], states: ['scheduled'] } as const;
      await created(ctx, { type: 'digest.send', args: {}, unique });
      const scheduled = await created(ctx, { type: 'digest.send', args: {}, scheduled_at: new Date(Date.now() + 3_600_000), unique });
      expect(scheduled.state).to.equal('scheduled');
      const error = await rejection(
        enqueue(ctx, { type: 'digest.send', args: {}, scheduled_at: new Date(Date.now() + 7_200_000), unique }),
      );
      expect(error).to.include({ existingJobId: scheduled.id, existingJobState: 'scheduled' });
      expect(await stateOf(ctx, scheduled.id)).to.equal('scheduled');
    });
  });
}
