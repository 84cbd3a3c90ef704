import { expect } from 'chai';
import { created, elapse, enqueue, needsVirtualClock, rejection, run, type SuiteContext, withShortPeriod } from './suite-context.js';

export function period(ctx: SuiteContext): void {
  describe('§7 period', function () {
    it('§7.1 §14.3 after the period elapses the same job is accepted', async function () {
      await withShortPeriod(ctx, this, async ({ iso, ms, inWindow }) => {
        const unique = { keys: ['type', 'args'], period: iso } as const;
        const first = await created(ctx, { type: 'notification.push', args: { user_id: 42 }, unique });
        const error = await rejection(inWindow(enqueue(ctx, { type: 'notification.push', args: { user_id: 42 }, unique })));
        expect(error.existingJobId).to.equal(first.id);
        await elapse(ctx, ms + 250);
        const second = await created(ctx, { type: 'notification.push', args: { user_id: 42 }, unique });
        expect(second.id).to.not.equal(first.id);
      });
    });

    it("§7.2 the window is anchored at the existing job's created_at, not at rejected attempts", async function () {
      await withShortPeriod(ctx, this, async ({ iso, ms, inWindow }) => {
        const unique = { keys: ['type'], period: iso } as const;
        await created(ctx, { type: 'notification.push', args: {}, unique });
        await elapse(ctx, ms * 0.6);
        expect((await rejection(inWindow(enqueue(ctx, { type: 'notification.push', args: {}, unique })))).code).to.equal('duplicate');
        // 0.6 + 0.55 periods after the first job: a window anchored at the rejected attempt would still be open.
        await elapse(ctx, ms * 0.55);
        await created(ctx, { type: 'notification.push', args: {}, unique });
      });
    });

    it('§7.4 one millisecond before created_at + period it is a duplicate; at created_at + period it is not', async function () {
      needsVirtualClock(ctx, this, 'needs an exact instant');
      const clock = ctx.subject.clock!;
      clock.set(Date.parse('2026-03-01T10:00:00.000Z'));
      const unique = { keys: ['type'], period: 'PT1H30M0.5S' } as const;
      const first = await created(ctx, { type: 'report.hourly', args: {}, unique });
      clock.set(Date.parse(first.created_at) + 5_400_500 - 1);
      expect((await rejection(enqueue(ctx, { type: 'report.hourly', args: {}, unique }))).existingJobId).to.equal(first.id);
      clock.advance(1);
      await created(ctx, { type: 'report.hourly', args: {}, unique });
    });

    it('§7.1 a calendar period P1M from 31 January ends on the last day of February', async function () {
      needsVirtualClock(ctx, this, 'a calendar month cannot be waited out');
      const clock = ctx.subject.clock!;
      clock.set(Date.parse('2026-01-31T12:00:00.000Z'));
      const unique = { keys: ['type'], period: 'P1M' } as const;
      const first = await created(ctx, { type: 'billing.monthly', args: {}, unique });
      clock.set(Date.parse('2026-02-28T11:59:59.999Z'));
      expect((await rejection(enqueue(ctx, { type: 'billing.monthly', args: {}, unique }))).existingJobId).to.equal(first.id);
      clock.set(Date.parse('2026-02-28T12:00:00.000Z'));
      await created(ctx, { type: 'billing.monthly', args: {}, unique });
    });

    it('§7.1 without a period the constraint lasts as long as the job is in a checked state', async function () {
      needsVirtualClock(ctx, this, 'needs years to pass');
      const unique = { keys: ['type'] } as const;
      const first = await created(ctx, { type: 'cleanup.run', args: {}, unique });
      ctx.subject.clock!.advance(10 * 365 * 86_400_000);
      expect((await rejection(enqueue(ctx, { type: 'cleanup.run', args: {}, unique }))).existingJobId).to.equal(first.id);
    });

    it('§7.4 AND semantics: a completed job inside the period is not a duplicate under the default states', async function () {
      const unique = { keys: ['type'], period: 'P1D' } as const;
      const first = await created(ctx, { type: 'invoice.generate', args: {}, unique });
      await run(ctx, first.id, 'complete');
      await created(ctx, { type: 'invoice.generate', args: {}, unique });
    });

    it('§6.3 §7.1 with "completed" in states a completed job blocks only until its period ends', async function () {
      await withShortPeriod(ctx, this, async ({ iso, ms, inWindow }) => {
        const unique = { keys: ['type'], period: iso, states: ['available', 'active', 'completed'], on_conflict: 'ignore' } as const;
        const first = await created(ctx, { type: 'invoice.generate', args: {}, unique });
        await run(ctx, first.id, 'complete');
        const again = await inWindow(enqueue(ctx, { type: 'invoice.generate', args: {}, unique }));
        expect(again).to.deep.include({ outcome: 'deduplicated' });
        expect(again.job.id).to.equal(first.id);
        await elapse(ctx, ms + 250);
        await created(ctx, { type: 'invoice.generate', args: {}, unique });
      });
    });
  });
}
