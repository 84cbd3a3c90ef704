import { expect } from 'chai';
import type { OjsJob } from '../../src/index.js';
import { created, enqueue, rejection, type SuiteContext } from './suite-context.js';

/** The job's count and time, as getJob reads them. */
async function countOf(ctx: SuiteContext, id: string): Promise<Pick<OjsJob, 'duplicate_count' | 'last_duplicate_at'>> {
  const job = (await ctx.subject.backend.getJob(id))!;
  return { duplicate_count: job.duplicate_count, last_duplicate_at: job.last_duplicate_at };
}

/** A time the backend wrote, read back: ISO 8601 UTC, not before `after`. */
function expectTimeFrom(time: string | undefined, after: string): void {
  expect(time).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  expect(Date.parse(time!)).to.be.at.least(Date.parse(after));
}

// Duplicate counts (docs/decisions.md, "Duplicate counts"): the job an add met and left holding
// the key counts the add, under the spec section of the answer that met it.
export function duplicateCounts(ctx: SuiteContext): void {
  describe('§5 duplicate counts', function () {
    it('§5.4 ignore: each deduplicated add counts on the job it met, in its answer and in getJob, with the time of the last', async function () {
      const unique = { keys: ['type', 'args'], on_conflict: 'ignore' } as const;
      const first = await created(ctx, { type: 'report.build', args: { day: 1 }, unique });
      expect(first).to.not.have.any.keys('duplicate_count', 'last_duplicate_at');
      const second = await enqueue(ctx, { type: 'report.build', args: { day: 1 }, unique });
      expect(second.job).to.include({ id: first.id, duplicate_count: 1 });
      expectTimeFrom(second.job.last_duplicate_at, first.created_at);
      const third = await enqueue(ctx, { type: 'report.build', args: { day: 1 }, unique });
      expect(third.job).to.include({ id: first.id, duplicate_count: 2 });
      expectTimeFrom(third.job.last_duplicate_at, second.job.last_duplicate_at!);
      expect(await countOf(ctx, first.id)).to.deep.equal({ duplicate_count: 2, last_duplicate_at: third.job.last_duplicate_at });
      // Another key's add is no duplicate of it, and counts nowhere.
      const other = await created(ctx, { type: 'report.build', args: { day: 2 }, unique });
      expect((await countOf(ctx, first.id)).duplicate_count).to.equal(2);
      expect(await countOf(ctx, other.id)).to.deep.equal({ duplicate_count: undefined, last_duplicate_at: undefined });
    });

    it('§5.1 reject: a rejected add counts on the job that refused it, unless the entry point undid the add', async function () {
      const unique = { keys: ['type', 'args'], on_conflict: 'reject' } as const;
      const first = await created(ctx, { type: 'email.send', args: { user_id: 7 }, unique });
      await rejection(enqueue(ctx, { type: 'email.send', args: { user_id: 7 }, unique }));
      await rejection(enqueue(ctx, { type: 'email.send', args: { user_id: 7 }, unique }));
      const counted = await countOf(ctx, first.id);
      if (ctx.subject.refusalUndone !== undefined) {
        this.test!.title += ` [undone: ${ctx.subject.refusalUndone}]`;
        expect(counted).to.deep.equal({ duplicate_count: undefined, last_duplicate_at: undefined });
        return;
      }
      expect(counted.duplicate_count).to.equal(2);
      expectTimeFrom(counted.last_duplicate_at, first.created_at);
    });

    it('§5.2 replace: the new job starts uncounted; the replaced job keeps the count it had', async function () {
      const ignore = { keys: ['type'], on_conflict: 'ignore' } as const;
      const first = await created(ctx, { type: 'cache.warm', args: { v: 1 }, unique: ignore });
      await enqueue(ctx, { type: 'cache.warm', args: { v: 1 }, unique: ignore });
      const replaced = await enqueue(ctx, { type: 'cache.warm', args: { v: 2 }, unique: { ...ignore, on_conflict: 'replace' } });
      expect(replaced.outcome).to.equal('replaced');
      expect(replaced.job).to.not.have.any.keys('duplicate_count', 'last_duplicate_at');
      expect(await countOf(ctx, replaced.job.id)).to.deep.equal({ duplicate_count: undefined, last_duplicate_at: undefined });
      expect((await countOf(ctx, first.id)).duplicate_count).to.equal(1);
    });

    it('§5.2 x_update: an updated add counts once on the job it updated', async function () {
      if (!(ctx.subject.backend.capabilities.unique_jobs.extensions ?? []).includes('x_update')) {
        this.test!.title += ' [skipped: this entry point has no x_update]';
        this.skip();
      }
      const unique = { keys: ['type'], on_conflict: 'ignore', x_update: { available: ['args'] } } as const;
      const first = await created(ctx, { type: 'search.index', args: { v: 1 }, unique });
      const updated = await enqueue(ctx, { type: 'search.index', args: { v: 2 }, unique });
      expect(updated.outcome).to.equal('updated');
      expect(updated.job).to.include({ id: first.id, duplicate_count: 1 });
      expect((await countOf(ctx, first.id)).duplicate_count).to.equal(1);
    });
  });
}
