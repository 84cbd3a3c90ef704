/**
 * The sidecar layout version (bullmq-sidecar-keys.ts, SIDECAR_LAYOUT_VERSION;
 * lua/includes/ojs-layout.lua): a namespace of the sidecar records the layout on first use, and a
 * process of another layout is refused by every script that reads or writes it, before anything
 * is written. "Another process" is a layout key holding another version, as a build of another
 * layout would have written it.
 */
import { FlowProducer, type Queue } from 'bullmq';
import { expect } from 'chai';
import { createBullMQBackend, removeUniquenessIndex, withUniqueness } from '../../adapters/bullmq/index.js';
import { flowScriptsProblem } from '../../adapters/bullmq/bullmq-script-set.js';
import { globalLayoutKey, queueLayoutKey, SIDECAR_LAYOUT_VERSION } from '../../adapters/bullmq/bullmq-sidecar-keys.js';
import { isBackendError, type BackendError } from '../../src/index.js';
import { useRedisPrefix, type RedisTestContext } from './bullmq-test-redis.js';

const OURS = String(SIDECAR_LAYOUT_VERSION);
const unique = { keys: ['queue', 'type', 'args'], on_conflict: 'reject' } as const;
const prefixWide = { keys: ['type', 'args'], on_conflict: 'reject' } as const;

/** The refusal every operation of this layout meets on a namespace of `theirs`. */
async function refusedByLayout(operation: Promise<unknown>, theirs: string): Promise<BackendError> {
  const error = await operation.then(
    () => expect.fail('expected a layout refusal'),
    (failure: unknown) => failure,
  );
  expect(isBackendError(error), String(error)).to.equal(true);
  const backendError = error as BackendError;
  expect(backendError.written).to.equal(false);
  expect(backendError.message).to.contain(`layout version ${theirs}`).and.to.contain(`layout version ${OURS}`);
  return backendError;
}

/**
 * Every key under the test's prefix, sorted (SCAN: the test's own keys only), but BullMQ's queue
 * `meta` hashes, which a Queue or FlowProducer writes when it connects, whatever it then adds.
 */
async function keysUnder(ctx: RedisTestContext): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = await ctx.redis.scan(cursor, 'MATCH', `${ctx.prefix}:*`, 'COUNT', 1000);
    cursor = next;
    keys.push(...found.filter((key) => !key.endsWith(':meta')));
  } while (cursor !== '0');
  return keys.sort();
}

describe('bullmq adapter: the sidecar layout version', function () {
  this.timeout(20_000);
  const ctx = useRedisPrefix(import.meta.url);
  const base = (queue: string) => `${ctx.prefix}:${queue}:`;
  const rootPrefix = () => `${ctx.prefix}:`;

  describe('first use', () => {
    it("a first unique add records this layout in its index's namespace: the queue's, or the prefix's for a policy without `queue`", async function () {
      const queue = withUniqueness(ctx.queue('q'));
      await queue.add('t', { n: 1 }, { unique });
      expect(await ctx.redis.get(queueLayoutKey(base('q')))).to.equal(OURS);
      expect(await ctx.redis.exists(globalLayoutKey(rootPrefix()))).to.equal(0);
      await queue.add('t', { n: 1 }, { unique: prefixWide });
      expect(await ctx.redis.get(globalLayoutKey(rootPrefix()))).to.equal(OURS);
    });

    it("the backend's first enqueue with an id records it in the queue's namespace and the prefix's (the id claim spans its queues)", async function () {
      const backend = createBullMQBackend({ connection: ctx.redis, prefix: ctx.prefix });
      ctx.closeLater(backend);
      await backend.enqueue({ type: 't', queue: 'q', args: { n: 1 }, unique });
      expect(await ctx.redis.get(queueLayoutKey(base('q')))).to.equal(OURS);
      expect(await ctx.redis.exists(globalLayoutKey(rootPrefix()))).to.equal(0);
      await backend.enqueue({ type: 't', queue: 'q', args: { n: 2 }, id: 'job-1' });
      expect(await ctx.redis.get(globalLayoutKey(rootPrefix()))).to.equal(OURS);
    });

    it('a refused add records nothing: an id already taken, in a namespace no add has written yet', async function () {
      const plain = ctx.queue('q');
      await plain.add('t', { n: 0 }, { jobId: 'taken' });
      await withUniqueness(plain)
        .add('t', { n: 1 }, { unique, jobId: 'taken' })
        .then(
          () => expect.fail('expected the id to be refused'),
          () => undefined,
        );
      expect(await ctx.redis.exists(queueLayoutKey(base('q')))).to.equal(0);
    });

    it('a plain add through the wrapper records nothing (it sends nothing of the adapter)', async function () {
      await withUniqueness(ctx.queue('q')).add('t', { n: 1 });
      expect(await ctx.redis.exists(queueLayoutKey(base('q')))).to.equal(0);
    });
  });

  for (const theirs of [String(SIDECAR_LAYOUT_VERSION + 1), String(SIDECAR_LAYOUT_VERSION - 1)]) {
    describe(`a prefix in layout ${theirs}, a process of layout ${OURS}`, () => {
      it('withUniqueness(queue).add and addBulk of a unique job are refused (BackendError, written: false, both versions named); no job, no index entry', async function () {
        await ctx.redis.set(queueLayoutKey(base('q')), theirs);
        const before = await keysUnder(ctx);
        const queue = withUniqueness(ctx.queue('q'));
        await refusedByLayout(queue.add('t', { n: 1 }, { unique }), theirs);
        await refusedByLayout(queue.add('t', { n: 2 }, { unique, jobId: 'custom' }), theirs);
        await refusedByLayout(queue.addBulk([{ name: 't', data: { n: 3 }, opts: { unique } }]), theirs);
        expect(await keysUnder(ctx)).to.deep.equal(before);
        expect(await ctx.redis.get(queueLayoutKey(base('q')))).to.equal(theirs);
      });

      it("a policy without `queue` is refused on the prefix's layout, whatever the queue's", async function () {
        await ctx.redis.set(globalLayoutKey(rootPrefix()), theirs);
        const before = await keysUnder(ctx);
        await refusedByLayout(withUniqueness(ctx.queue('q')).add('t', { n: 1 }, { unique: prefixWide }), theirs);
        expect(await keysUnder(ctx)).to.deep.equal(before);
      });

      it("createBullMQBackend(...).enqueue and enqueueMany are refused, on the queue's layout and on the prefix's; nothing written", async function () {
        const backend = createBullMQBackend({ connection: ctx.redis, prefix: ctx.prefix });
        ctx.closeLater(backend);
        for (const [key, policy] of [
          [queueLayoutKey(base('q')), unique],
          [globalLayoutKey(rootPrefix()), prefixWide],
        ] as const) {
          await ctx.redis.set(key, theirs);
          const before = await keysUnder(ctx);
          await refusedByLayout(backend.enqueue({ type: 't', queue: 'q', args: { n: 1 }, unique: policy }), theirs);
          await refusedByLayout(backend.enqueue({ type: 't', queue: 'q', args: { n: 1 }, id: 'job-1' }), theirs);
          await refusedByLayout(
            backend.enqueueMany([
              { type: 't', queue: 'q', args: { n: 2 }, unique },
              { type: 't', queue: 'q', args: { n: 3 }, unique },
            ]),
            theirs,
          );
          expect(await keysUnder(ctx)).to.deep.equal(before);
          await ctx.redis.del(key);
        }
      });

      it('a unique child of an existing parent (a one-node unique-flow) and a flow tree with a unique node are refused; nothing written', async function () {
        const parent = await ctx.queue('p').add('p', {}, { jobId: 'parent' });
        await ctx.redis.set(queueLayoutKey(base('c')), theirs);
        const before = await keysUnder(ctx);
        await refusedByLayout(
          withUniqueness(ctx.queue('c')).add('c', { n: 1 }, { unique, parent: { id: parent.id!, queue: `${ctx.prefix}:p` } }),
          theirs,
        );
        // A tree needs BullMQ's release step, which 6.0.0 lacks (the tree is refused for that first).
        if (flowScriptsProblem() === null) {
          const flow = withUniqueness(new FlowProducer({ connection: ctx.redis, prefix: ctx.prefix }));
          ctx.closeLater(flow);
          await refusedByLayout(
            flow.add({ name: 'p', queueName: 'p', children: [{ name: 'c', queueName: 'c', data: { n: 1 }, opts: { unique } }] }),
            theirs,
          );
        }
        expect(await keysUnder(ctx)).to.deep.equal(before);
      });

      it('every other script of the sidecar refuses too: the probe, findUniqueJob, releaseUniqueKey, obliterate, getJob, cancel', async function () {
        const backend = createBullMQBackend({ connection: ctx.redis, prefix: ctx.prefix });
        ctx.closeLater(backend);
        const input = { type: 't', queue: 'q', args: { n: 1 }, unique };
        const { job } = await backend.enqueue(input);
        const queue = withUniqueness(backend.queue('q') as Queue);
        // A duplicate: the next add of the key is sent as the probe (bullmq-probe-hints.ts).
        await queue.add('t', { n: 1 }, { unique }).catch(() => undefined);
        await ctx.redis.set(queueLayoutKey(base('q')), theirs);
        const before = await keysUnder(ctx);
        await refusedByLayout(queue.add('t', { n: 1 }, { unique }), theirs);
        await refusedByLayout(queue.findUniqueJob('t', { n: 1 }, { unique }), theirs);
        await refusedByLayout(backend.findUniqueJob(input), theirs);
        await refusedByLayout(backend.releaseUniqueKey(input), theirs);
        await refusedByLayout(backend.getJob(job.id), theirs);
        await refusedByLayout(backend.cancel(job.id), theirs);
        expect(await keysUnder(ctx)).to.deep.equal(before);
        expect(await backend.queue('q').getJobState(job.id)).to.equal('waiting');
      });

      it('draining the queues and deleting their sidecar (removeUniquenessIndex, with { global: true }) moves the prefix to this layout', async function () {
        await ctx.redis.set(queueLayoutKey(base('q')), theirs);
        await ctx.redis.set(globalLayoutKey(rootPrefix()), theirs);
        const plain = ctx.queue('q');
        await plain.obliterate({ force: true });
        await removeUniquenessIndex(plain, { global: true });
        expect(await ctx.redis.exists(queueLayoutKey(base('q')), globalLayoutKey(rootPrefix()))).to.equal(0);
        const created = await withUniqueness(plain).add('t', { n: 1 }, { unique });
        expect(created.unique.outcome).to.equal('created');
        expect(await ctx.redis.get(queueLayoutKey(base('q')))).to.equal(OURS);
      });
    });
  }
});
