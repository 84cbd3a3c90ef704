/**
 * Key lookups on BullMQ (findUniqueJob, releaseUniqueKey) on the wrapped queue and the backend,
 * and the wrapped queue's `obliterate`, which removes the queue's sidecar but no other queue's
 * entries. Real Redis.
 */
import { expect } from 'chai';
import { Worker } from 'bullmq';
import { createBullMQBackend, withUniqueness } from '../../adapters/bullmq/index.js';
import { isInvalidJobInputError } from '../../src/index.js';
import { rejection } from '../conformance/suite-context.js';
import { readIndex, useRedisPrefix } from './bullmq-test-redis.js';

const FILE = 'bullmq-lookups.test.ts';

describe('bullmq adapter: key lookups and obliterate', function () {
  this.timeout(20_000);
  const ctx = useRedisPrefix(FILE);

  describe('findUniqueJob', () => {
    it('wrapped queue: the job an add would meet, by job or by key; null when none; a policy that does not count it', async () => {
      const queue = withUniqueness(ctx.queue('mail'));
      const unique = { keys: ['type'], states: ['available', 'scheduled', 'active', 'completed'] } as const;
      expect(await queue.findUniqueJob('f', {}, { unique })).to.equal(null);
      const first = await queue.add('f', { n: 1 }, { unique });
      const found = await queue.findUniqueJob('f', { n: 2 }, { unique });
      expect(found?.id).to.equal(first.id);
      expect(found?.data).to.deep.equal({ n: 1 });
      expect(found?.ojsState).to.equal('available');
      expect((await queue.findUniqueJob({ uniqueness_key: first.unique.uniquenessKey }))?.id).to.equal(first.id);
      // Completed: its policy still counts it; by key alone (live states) nothing holds it.
      const worker = new Worker('mail', async () => 'ok', { connection: ctx.connect(), prefix: ctx.prefix });
      ctx.closeLater(worker);
      await new Promise<void>((resolve) => worker.on('completed', () => resolve()));
      expect((await queue.findUniqueJob('f', {}, { unique }))?.id).to.equal(first.id);
      expect(await queue.findUniqueJob({ uniqueness_key: first.unique.uniquenessKey })).to.equal(null);
      expect(await queue.findUniqueJob('f', {}, { unique: { keys: ['type'] } }), 'a policy without completed').to.equal(null);
    });

    it('wrapped queue: a cancelled (archived) job is found with its OJS state, which BullMQ cannot tell', async () => {
      const queue = withUniqueness(ctx.queue('mail'));
      const unique = { keys: ['type'], states: ['available', 'cancelled'] } as const;
      const old = await queue.add('f', {}, { unique });
      const backend = createBullMQBackend({ connection: ctx.redis, prefix: ctx.prefix });
      ctx.closeLater(backend);
      await backend.cancel(old.id!);
      const found = await queue.findUniqueJob('f', {}, { unique: { keys: ['type'], states: ['cancelled'] } });
      expect(found?.id).to.equal(old.id);
      expect(found?.ojsState).to.equal('cancelled');
      // A job a replace cancelled is superseded: no lookup finds it (docs/decisions.md).
      await queue.add('g', {}, { unique });
      await queue.add('g', {}, { unique: { ...unique, on_conflict: 'replace' } });
      expect(await queue.findUniqueJob('g', {}, { unique: { keys: ['type'], states: ['cancelled'] } })).to.equal(null);
    });

    it('backend: by JobInput or by key, as an OjsJob; a cross-queue key is found from any queue', async () => {
      const backend = createBullMQBackend({ connection: ctx.redis, prefix: ctx.prefix });
      ctx.closeLater(backend);
      const unique = { keys: ['type'] } as const;
      const created = (await backend.enqueue({ type: 'f', queue: 'a', args: {}, unique })).job;
      expect(await backend.findUniqueJob({ type: 'f', queue: 'b', args: {}, unique })).to.deep.include({ id: created.id, queue: 'a' });
      expect(await backend.findUniqueJob({ uniqueness_key: created.uniqueness_key! })).to.deep.include({ id: created.id });
      const perQueueUnique = { keys: ['type', 'queue'] } as const;
      const perQueue = (await backend.enqueue({ type: 'g', queue: 'b', args: {}, unique: perQueueUnique })).job;
      expect(await backend.findUniqueJob({ uniqueness_key: perQueue.uniqueness_key! })).to.deep.include({ id: perQueue.id, queue: 'b' });
      expect(await backend.findUniqueJob({ type: 'g', queue: 'a', args: {}, unique: perQueueUnique })).to.equal(null);
    });

    it('refuses a lookup without a policy and an empty key, naming the field', async () => {
      const queue = withUniqueness(ctx.queue('mail'));
      const noPolicy = await rejection(queue.findUniqueJob('f', {}));
      expect(isInvalidJobInputError(noPolicy) && noPolicy.issues.map((issue) => issue.path)).to.deep.equal(['opts.unique']);
      const empty = await rejection(queue.releaseUniqueKey({ uniqueness_key: '' }));
      expect(isInvalidJobInputError(empty) && empty.issues.map((issue) => issue.path)).to.deep.equal(['uniqueness_key']);
      const backend = createBullMQBackend({ connection: ctx.redis, prefix: ctx.prefix });
      ctx.closeLater(backend);
      const backendNoPolicy = await rejection(backend.findUniqueJob({ type: 'f', args: {} }));
      expect(isInvalidJobInputError(backendNoPolicy) && backendNoPolicy.issues.map((issue) => issue.path)).to.deep.equal(['unique']);
    });
  });

  describe('releaseUniqueKey', () => {
    it('the next add inserts; the released job stays waiting; counts how many stopped holding the key', async () => {
      const queue = withUniqueness(ctx.queue('mail'));
      const unique = { keys: ['type'], on_conflict: 'ignore' } as const;
      const first = await queue.add('f', {}, { unique });
      expect((await queue.add('f', {}, { unique })).unique.outcome).to.equal('deduplicated');
      expect(await queue.releaseUniqueKey('f', {}, { unique })).to.equal(1);
      expect(await queue.releaseUniqueKey('f', {}, { unique }), 'nothing holds it any more').to.equal(0);
      expect(await queue.getJobState(first.id!)).to.equal('waiting');
      const second = await queue.add('f', {}, { unique });
      expect(second.unique.outcome).to.equal('created');
      expect(second.id).to.not.equal(first.id);
      expect((await queue.add('f', {}, { unique })).id, 'the new job holds the key; the released one is not counted').to.equal(second.id);
      expect(await queue.releaseUniqueKey({ uniqueness_key: second.unique.uniquenessKey })).to.equal(1);
    });

    it('backend: by key; a released job is still reported with its key', async () => {
      const backend = createBullMQBackend({ connection: ctx.redis, prefix: ctx.prefix });
      ctx.closeLater(backend);
      const job = { type: 'f', args: {}, unique: {} };
      const first = (await backend.enqueue(job)).job;
      expect(await backend.releaseUniqueKey({ uniqueness_key: first.uniqueness_key! })).to.equal(1);
      expect((await backend.enqueue(job)).outcome).to.equal('created');
      expect(await backend.getJob(first.id)).to.deep.include({ state: 'available', uniqueness_key: first.uniqueness_key });
    });
  });

  describe('obliterate', () => {
    it("removes the queue's sidecar after BullMQ's obliterate; another queue's entries and jobs stay deduplicated", async () => {
      const a = withUniqueness(ctx.queue('a'));
      const b = withUniqueness(ctx.queue('b'));
      const global = { keys: ['type', 'args'], on_conflict: 'replace' } as const;
      await a.add('f', { n: 1 }, { unique: global });
      await a.add('f', { n: 1 }, { unique: global }); // an archive of a's
      const perQueue = { keys: ['type', 'queue'] } as const;
      await a.add('g', {}, { unique: perQueue });
      const kept = await b.add('f', { n: 2 }, { unique: global });
      await b.add('g', {}, { unique: perQueue });
      await a.obliterate();
      // Only the layout key stays (as the queue stays in the queue set): the namespace is still this layout's.
      expect(await ctx.redis.keys(`${ctx.prefix}:a:*`)).to.deep.equal([`${ctx.prefix}:a:ojs:layout`]);
      const globalIndex = await readIndex(ctx.redis, `${ctx.prefix}:ojs:global:index`);
      expect([...globalIndex.values()].flat().map((entry) => entry.queue)).to.deep.equal(['b']);
      expect((await b.add('f', { n: 2 }, { unique: { ...global, on_conflict: 'ignore' } })).id).to.equal(kept.id);
      expect((await a.add('f', { n: 1 }, { unique: { ...global, on_conflict: 'ignore' } })).unique.outcome).to.equal('created');
    });

    it('BullMQ refusing (active jobs, no force) leaves the sidecar', async () => {
      const a = withUniqueness(ctx.queue('a'));
      await a.add('f', {}, { unique: { keys: ['type', 'queue'], states: ['available', 'active', 'scheduled', 'retryable'] } });
      const worker = new Worker('a', () => new Promise(() => undefined), { connection: ctx.connect(), prefix: ctx.prefix });
      await new Promise<void>((resolve) => worker.on('active', () => resolve()));
      await rejection(a.obliterate());
      expect(await ctx.redis.exists(`${ctx.prefix}:a:ojs:index`)).to.equal(1);
      await worker.close(true);
    });
  });
});
