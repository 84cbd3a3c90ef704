import { expect } from 'chai';
import { created, enqueue, rejection, run, stateOf, type SuiteContext } from './suite-context.js';

export function retry(ctx: SuiteContext): void {
  describe('§9 interaction with retry', function () {
    it('§9.1 §14.10 a retryable job holds the key', async function () {
      const unique = { keys: ['type', 'args'] } as const;
      const first = await created(ctx, { type: 'email.send', args: { user_id: 42 }, unique, max_attempts: 3 });
      expect((await run(ctx, first.id, 'fail')).state).to.equal('retryable');
      const error = await rejection(enqueue(ctx, { type: 'email.send', args: { user_id: 42 }, unique }));
      expect(error).to.include({ code: 'duplicate', existingJobId: first.id, existingJobState: 'retryable' });
    });

    it('§9.3 a job that exhausts its retries is discarded and releases the key', async function () {
      const unique = { keys: ['type', 'args'] } as const;
      const first = await created(ctx, { type: 'email.send', args: { user_id: 42 }, unique, max_attempts: 2 });
      expect((await run(ctx, first.id, 'fail')).state).to.equal('retryable');
      await ctx.subject.makeDue(first.id);
      expect((await run(ctx, first.id, 'fail')).state).to.equal('discarded');
      await created(ctx, { type: 'email.send', args: { user_id: 42 }, unique });
    });

    it('§9.2 a retry does not re-check uniqueness: the retried job runs again beside a newer duplicate', async function () {
      // A policy that ignores retryable jobs lets a second job in while the first waits to retry.
      const unique = { keys: ['type'], states: ['available', 'scheduled', 'pending'] } as const;
      const first = await created(ctx, { type: 'sync.run', args: { n: 1 }, unique, max_attempts: 3 });
      expect((await run(ctx, first.id, 'fail')).state).to.equal('retryable');
      const second = await created(ctx, { type: 'sync.run', args: { n: 2 }, unique, queue: 'other' });
      await ctx.subject.makeDue(first.id);
      expect(await stateOf(ctx, first.id), 'the retried job is admitted, not discarded or cancelled').to.equal('available');
      expect(await stateOf(ctx, second.id)).to.equal('available');
      expect((await run(ctx, first.id, 'complete')).state).to.equal('completed');
    });
  });
}
