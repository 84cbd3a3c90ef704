/**
 * x_successor on BullMQ beyond the reference rows (test/expressiveness): the holder's ends (BullMQ's
 * own finish, a final failure, an OJS cancel, BullMQ's removal), the successor's id reservation,
 * what a replace and a key release drop, the OJS fields and index entry a promoted job is given,
 * the refusals (another queue's holder, a flow node, enqueueMany), explain. docs/design/successor.md.
 */
import { randomUUID } from 'node:crypto';
import { FlowProducer, Worker, type Job } from 'bullmq';
import { expect } from 'chai';
import { createBullMQBackend, withUniqueness, type BullMQBackend } from '../../adapters/bullmq/index.js';
import { isInvalidJobInputError, type EnqueueResult, type JobInput } from '../../src/index.js';
import { flowScriptsProblem } from '../../adapters/bullmq/bullmq-script-set.js';
import { indexEntries, useRedisPrefix } from './bullmq-test-redis.js';

describe('bullmq adapter: x_successor', function () {
  this.timeout(30_000);
  const ctx = useRedisPrefix('bullmq-successor.test.ts');
  let backend: BullMQBackend;
  beforeEach(function () {
    backend = createBullMQBackend({ connection: ctx.redis, prefix: ctx.prefix });
    ctx.closeLater(backend);
  });
  const unique = { keys: ['type'], on_conflict: 'ignore', x_successor: 'latest' } as const;
  const successorId = (result: EnqueueResult): string | undefined => (result.outcome === 'deduplicated' ? result.successor?.id : undefined);
  const input = (args: Record<string, unknown>, more: Partial<JobInput> = {}): JobInput => ({ type: 't', args, unique, ...more });

  /** A worker takes the next job of `queue` (it must be `id`) and holds it active. */
  async function start(id: string, queue = 'default'): Promise<{ job: Job; token: string }> {
    const worker = new Worker(queue, null, { connection: ctx.connect(), prefix: ctx.prefix, autorun: false });
    ctx.closeLater(worker);
    const token = randomUUID();
    const job = await worker.getNextJob(token, { block: false });
    expect(job?.id, 'the worker took the job').to.equal(id);
    return { job: job!, token };
  }

  it('the promoted job is its key’s job: OJS fields adopted from its options, listed in the index, a later duplicate meets it', async function () {
    const first = await backend.enqueue(input({ v: 1 }));
    const running = await start(first.job.id);
    const second = await backend.enqueue(input({ v: 2 }, { meta: { from: 'second' } }));
    const third = await backend.enqueue(input({ v: 3 }, { id: 'chosen', meta: { from: 'third' } }));
    expect(second.job).to.deep.include({ id: first.job.id, state: 'active' });
    expect(successorId(third)).to.equal('chosen');
    // Not a job yet; the earlier successor never becomes one.
    expect(await backend.getJob('chosen')).to.equal(null);
    const base = `${ctx.prefix}:default:`;
    expect(await ctx.redis.hget(`${base}dn:ojs:s:${first.job.id}`, 'jid')).to.equal('chosen');
    await running.job.moveToCompleted('done', running.token, false);
    expect(await backend.getJob(successorId(second)!)).to.equal(null);
    // Read before any script adopted it: its view comes from the options BullMQ stored.
    expect(await backend.getJob('chosen')).to.deep.include({
      state: 'available',
      args: { v: 3 },
      meta: { from: 'third' },
      uniqueness_key: first.job.uniqueness_key,
    });
    const after = await backend.enqueue(input({ v: 4 }));
    expect(after).to.deep.include({ outcome: 'deduplicated' });
    expect(after.job).to.deep.include({ id: 'chosen', args: { v: 3 } });
    expect(successorId(after)).to.equal(undefined);
    // Adopted: the fields on the hash, the entry's time is the job's own created_at.
    const promoted = await ctx.redis.hgetall(`${base}chosen`);
    expect(promoted).to.include({ ojsKey: first.job.uniqueness_key, ojsMeta: JSON.stringify({ from: 'third' }) });
    // keys ['type']: the prefix's index.
    const entries = await indexEntries(ctx.redis, `${ctx.prefix}:ojs:global:index`, first.job.uniqueness_key!);
    const entry = entries.find((e) => e.id === 'chosen');
    expect(entry, 'the successor is listed').to.not.equal(undefined);
    expect(Math.floor(entry!.us / 1000)).to.equal(Number(promoted.timestamp));
    expect(await ctx.redis.hlen(`${base}ojs:successors`)).to.equal(0);
    expect(await ctx.redis.exists(`${base}dn:ojs:s:${first.job.id}`)).to.equal(0);
  });

  it('a holder removed by its removeOnComplete (in the finishing script, after the promotion) still hands the key to its successor', async function () {
    const queue = withUniqueness(ctx.queue('default'));
    const first = await queue.add('t', { v: 1 }, { unique, removeOnComplete: true });
    const running = await start(first.id!);
    const dup = await queue.add('t', { v: 2 }, { unique });
    const pending = dup.unique?.outcome === 'deduplicated' ? dup.unique.successor?.id : undefined;
    await running.job.moveToCompleted('done', running.token, false);
    expect(await ctx.redis.exists(`${ctx.prefix}:default:${first.id}`), 'the holder is gone').to.equal(0);
    const again = await queue.add('t', { v: 3 }, { unique });
    expect(again.unique).to.deep.include({ outcome: 'deduplicated' });
    expect(again.id).to.equal(pending);
  });

  it('waits while the holder is retryable; a final failure promotes it', async function () {
    const first = await backend.enqueue(input({}, { max_attempts: 2 }));
    let running = await start(first.job.id);
    const dup = await backend.enqueue(input({ v: 2 }));
    await running.job.moveToFailed(new Error('once'), running.token, false);
    expect((await backend.getJob(first.job.id))?.state).to.be.oneOf(['retryable', 'available']);
    expect(await backend.getJob(successorId(dup)!), 'not after a failure with attempts left').to.equal(null);
    const job = await backend.queue('default').getJob(first.job.id);
    if ((await job!.getState()) === 'delayed') await job!.promote();
    running = await start(first.job.id);
    await running.job.moveToFailed(new Error('twice'), running.token, false);
    expect((await backend.getJob(first.job.id))?.state).to.equal('discarded');
    expect(await backend.getJob(successorId(dup)!)).to.deep.include({ state: 'available', args: { v: 2 } });
  });

  it('an OJS cancel of the holder promotes its successor', async function () {
    const first = await backend.enqueue(input({ v: 1 }));
    await start(first.job.id);
    const dup = await backend.enqueue(input({ v: 2 }, { priority: 3 }));
    await backend.cancel(first.job.id);
    expect(await backend.getJob(successorId(dup)!)).to.deep.include({ state: 'available', args: { v: 2 }, priority: 3 });
    const again = await backend.enqueue(input({ v: 3 }));
    expect(again.job.id).to.equal(successorId(dup));
  });

  it("BullMQ's removal of the holder drops its successor (the one divergence from memory, which promotes)", async function () {
    const first = await backend.enqueue(input({ v: 1 }));
    const running = await start(first.job.id);
    const dup = await backend.enqueue(input({ v: 2 }));
    await ctx.redis.del(`${ctx.prefix}:default:${first.job.id}:lock`);
    await running.job.remove();
    expect(await ctx.redis.exists(`${ctx.prefix}:default:dn:ojs:s:${first.job.id}`)).to.equal(0);
    expect(await backend.getJob(successorId(dup)!)).to.equal(null);
    expect((await backend.enqueue(input({ v: 3 }))).outcome).to.equal('created');
    // The key's next add dropped the id's reservation the removal left.
    expect(await ctx.redis.hlen(`${ctx.prefix}:default:ojs:successors`)).to.equal(0);
  });

  it("a successor's id is taken while it waits, on any queue of the backend; free again once it was replaced", async function () {
    const first = await backend.enqueue(input({}));
    await start(first.job.id);
    await backend.enqueue(input({}, { id: 'next' }));
    const error = await backend.enqueue({ type: 'other', args: {}, id: 'next', queue: 'elsewhere' }).catch((caught: unknown) => caught);
    expect(isInvalidJobInputError(error) && error.issues[0]!.path).to.equal('id');
    await backend.enqueue(input({ v: 2 }));
    expect((await backend.enqueue({ type: 'other', args: {}, id: 'next' })).outcome).to.equal('created');
  });

  it('a replace of a holder no longer active drops its successor; a key release too', async function () {
    const replacing = { ...unique, on_conflict: 'replace' } as const;
    const first = await backend.enqueue(input({}, { unique: replacing, max_attempts: 2 }));
    const running = await start(first.job.id);
    const dup = await backend.enqueue(input({ v: 2 }, { unique: replacing }));
    expect(successorId(dup)).to.be.a('string');
    await running.job.moveToFailed(new Error('once'), running.token, false);
    const replaced = await backend.enqueue(input({ v: 3 }, { unique: replacing }));
    expect(replaced.outcome).to.equal('replaced');
    expect(await ctx.redis.exists(`${ctx.prefix}:default:dn:ojs:s:${first.job.id}`)).to.equal(0);
    expect(await backend.getJob(successorId(dup)!)).to.equal(null);

    const released = { type: 'released', queue: 'r' };
    const holder = await backend.enqueue(input({}, released));
    await start(holder.job.id, 'r');
    const pending = await backend.enqueue(input({ v: 2 }, released));
    expect(await backend.releaseUniqueKey(input({}, released))).to.equal(1);
    expect(await ctx.redis.exists(`${ctx.prefix}:r:dn:ojs:s:${holder.job.id}`)).to.equal(0);
    expect(await ctx.redis.hexists(`${ctx.prefix}:r:ojs:successors`, successorId(pending)!)).to.equal(0);
  });

  it('refused, nothing written, beside an active job of another queue (BullMQ adds a successor to its holder’s queue)', async function () {
    const first = await backend.enqueue(input({}, { queue: 'a' }));
    await start(first.job.id, 'a');
    const error = await backend.enqueue(input({}, { queue: 'b' })).catch((caught: unknown) => caught);
    expect(isInvalidJobInputError(error) && error.issues.map((issue) => issue.path)).to.deep.equal(['unique.x_successor']);
    expect(await ctx.redis.exists(`${ctx.prefix}:a:dn:ojs:s:${first.job.id}`)).to.equal(0);
    // With the queue dimension the two queues' keys differ: each queue keeps its own.
    const perQueue = { ...unique, keys: ['type', 'queue'] } as const;
    expect((await backend.enqueue(input({}, { queue: 'b', unique: perQueue }))).outcome).to.equal('created');
  });

  it('refused on a flow node, before anything is sent', async function () {
    // A tree needs BullMQ's release step (not in 6.0.0), refused before any node is looked at.
    if (flowScriptsProblem() !== null) this.skip();
    const flows = withUniqueness(new FlowProducer({ connection: ctx.redis, prefix: ctx.prefix }));
    ctx.closeLater(flows);
    const error = await flows
      .add({ name: 'parent', queueName: 'default', children: [{ name: 't', queueName: 'default', data: {}, opts: { unique } }] })
      .catch((caught: unknown) => caught);
    expect(isInvalidJobInputError(error) && error.issues.map((issue) => issue.path)).to.deep.equal(['children[0].unique.x_successor']);
  });

  it("refused in the backend's enqueueMany (one unique-flow script), naming the job's field, nothing written", async function () {
    const error = await backend
      .enqueueMany([input({}, { type: 'plain', unique: { keys: ['type'] } }), input({})])
      .catch((caught: unknown) => caught);
    expect(isInvalidJobInputError(error) && error.issues.map((issue) => issue.path)).to.deep.equal(['[1].unique.x_successor']);
    expect(await backend.queue('default').count()).to.equal(0);
  });

  it('withUniqueness: the deduplicated job names the pending successor', async function () {
    const queue = withUniqueness(ctx.queue('default'));
    const first = await queue.add('t', { v: 1 }, { unique });
    await start(first.id!);
    const dup = await queue.add('t', { v: 2 }, { unique });
    expect(dup.id).to.equal(first.id);
    expect(dup.unique).to.deep.include({ outcome: 'deduplicated', existingJobState: 'active' });
    const id = dup.unique?.outcome === 'deduplicated' ? dup.unique.successor?.id : undefined;
    expect(id).to.be.a('string').and.not.equal(first.id);
  });

  it('explain says a duplicate of the active job would be kept as its successor', async function () {
    const first = await backend.enqueue(input({}));
    await start(first.job.id);
    expect(await backend.explainUnique(input({}))).to.deep.include({
      outcome: 'deduplicated',
      existing_job_id: first.job.id,
      successor: true,
    });
  });
});
