import { expect } from 'chai';
import type { ConflictStrategy, EnqueueResult } from '../../src/index.js';
import { enqueue, stateOf, type SuiteContext } from './suite-context.js';

const N = 200;

async function burst(ctx: SuiteContext, on_conflict: ConflictStrategy): Promise<PromiseSettledResult<EnqueueResult>[]> {
  const unique = { keys: ['type', 'args'], args_keys: ['user_id'], on_conflict } as const;
  return Promise.allSettled(Array.from({ length: N }, (_, i) => enqueue(ctx, { type: 'email.send', args: { user_id: 42, n: i }, unique })));
}

export function concurrency(ctx: SuiteContext): void {
  describe('§8.1 strong uniqueness under concurrency', function () {
    this.timeout(60_000);

    it(`§8.1 §14.11 ${N} concurrent reject enqueues: exactly one is created, every other one is a duplicate of it`, async function () {
      const results = await burst(ctx, 'reject');
      const createdIds = results.flatMap((r) => (r.status === 'fulfilled' && r.value.outcome === 'created' ? [r.value.job.id] : []));
      expect(createdIds, 'created').to.have.length(1);
      const rejected = results.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []));
      expect(rejected, 'rejected').to.have.length(N - 1);
      for (const error of rejected) expect(error).to.include({ code: 'duplicate', existingJobId: createdIds[0] });
    });

    it(`§8.1 §5.4 ${N} concurrent ignore enqueues: one job is created and all ${N} callers get its id`, async function () {
      const results = await burst(ctx, 'ignore');
      const values = results.map((r) => (r.status === 'fulfilled' ? r.value : expect.fail(String(r.reason))));
      expect(values.filter((v) => v.outcome === 'created')).to.have.length(1);
      expect(values.filter((v) => v.outcome === 'deduplicated')).to.have.length(N - 1);
      expect(new Set(values.map((v) => v.job.id)).size).to.equal(1);
    });

    it(`§8.4 ${N} concurrent replace enqueues: exactly one live job at the end, every replaced job cancelled`, async function () {
      const results = await burst(ctx, 'replace');
      const values = results.map((r) => (r.status === 'fulfilled' ? r.value : expect.fail(String(r.reason))));
      expect(
        values.filter((v) => v.outcome === 'created'),
        'created',
      ).to.have.length(1);
      expect(
        values.filter((v) => v.outcome === 'replaced'),
        'replaced',
      ).to.have.length(N - 1);
      const states = await Promise.all(values.map((v) => stateOf(ctx, v.job.id)));
      expect(
        states.filter((s) => s !== 'cancelled'),
        'live',
      ).to.deep.equal(['available']);
      // Each replace cancelled exactly the job that was live just before it: every job but the
      // last one live was cancelled by exactly one replace, so the replaces form one chain.
      const replacedIds = values.flatMap((v) =>
        v.outcome === 'replaced' ? [v.replaced.id, ...(v.also_replaced ?? []).map((j) => j.id)] : [],
      );
      const live = values.map((v) => v.job.id).filter((_, i) => states[i] !== 'cancelled');
      expect(replacedIds.length, 'one cancellation per replace').to.equal(N - 1);
      expect(new Set([...replacedIds, ...live]), 'cancelled + live = every job').to.deep.equal(new Set(values.map((v) => v.job.id)));
    });

    it('ojs-core §5.1 concurrent enqueues with one caller-chosen id: exactly one job gets it, nothing is overwritten', async function () {
      const id = 'conformance-fixed-id-7';
      const plainReason = ctx.subject.inexpressible?.plainCustomId;
      if (plainReason !== undefined) this.test!.title += ` [every add with a policy on this entry point: ${plainReason}]`;
      const results = await Promise.allSettled(
        // Half of them plain (no policy): the id must be claimed atomically on that path too.
        Array.from({ length: 20 }, (_, i) =>
          enqueue(ctx, {
            id,
            type: `report.v${i}`,
            args: { i },
            ...(i % 2 === 0 || plainReason !== undefined ? { unique: { keys: ['type'] } } : {}),
          }),
        ),
      );
      const winners = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
      expect(winners, 'created').to.have.length(1);
      expect(winners[0]!.outcome).to.equal('created');
      for (const r of results) if (r.status === 'rejected') expect(r.reason).to.include({ code: 'invalid_request' });
      const stored = await ctx.subject.backend.getJob(id);
      expect(stored).to.deep.include({ id, type: winners[0]!.job.type });
    });
  });
}
