/**
 * Regressions at the BullMQ adapter's seams, each compared with the memory backend (the
 * reference): replace over an already-cancelled duplicate, NFC-equivalent queue names, and
 * refused adds that must leave nothing behind.
 */
import { expect } from 'chai';
import { createBullMQBackend, withUniqueness } from '../../adapters/bullmq/index.js';
import { createMemoryBackend } from '../../adapters/memory/memory-backend.js';
import { queueRegistryKey } from '../../adapters/bullmq/bullmq-sidecar-keys.js';
import { uniqueAdd } from '../../adapters/bullmq/bullmq-enqueue.js';
import { UNIQUE_STATE_GROUPS, type EnqueueResult, type JobInput, type UniqueJobsBackend } from '../../src/index.js';
import { prepareUnique } from '../../src/unique-enqueue.js';
import { rejection } from '../conformance/suite-context.js';
import { useRedisPrefix } from './bullmq-test-redis.js';
import { replacedIds } from '../replaced-ids.js';

/** An outcome with ids replaced by the order in which the run first saw them, so two backends compare. */
function labeller(): (result: EnqueueResult | Error) => unknown {
  const labels = new Map<string, string>();
  const label = (id: string): string => {
    if (!labels.has(id)) labels.set(id, `#${labels.size + 1}`);
    return labels.get(id)!;
  };
  return (result) => {
    if (result instanceof Error)
      return { error: result.name, existing: 'existingJobId' in result ? label(String(result.existingJobId)) : undefined };
    const shape: Record<string, unknown> = {
      outcome: result.outcome,
      job: label(result.job.id),
      state: result.job.state,
      queue: result.job.queue,
    };
    if (result.outcome === 'replaced')
      shape.replaced = [result.replaced, ...(result.also_replaced ?? [])].map((job) => [
        label(job.id),
        job.state,
        job.replaced_by && label(job.replaced_by),
      ]);
    return shape;
  };
}

async function attempt(backend: UniqueJobsBackend, input: JobInput): Promise<EnqueueResult | Error> {
  return backend.enqueue(input).catch((error: Error) => error);
}

describe('bullmq adapter: seams, compared with memory', function () {
  this.timeout(20_000);
  const ctx = useRedisPrefix('bullmq-seams.test.ts');

  it('§5.2 replace with a cancelled duplicate: created, replaced, replaced (withUniqueness, states all); the key stays usable', async function () {
    const queue = withUniqueness(ctx.queue('emails'));
    const memory = createMemoryBackend();
    const unique = { states: [...UNIQUE_STATE_GROUPS.all], on_conflict: 'replace' as const };
    const expected = [];
    for (let i = 0; i < 4; i++) expected.push((await memory.enqueue({ type: 'send', queue: 'emails', args: { to: 'a' }, unique })).outcome);
    expect(expected).to.deep.equal(['created', 'replaced', 'replaced', 'replaced']);

    const outcomes = [];
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const job = await queue.add('send', { to: 'a' }, { unique });
      outcomes.push(job.unique!.outcome);
      ids.push(job.id!);
      // Each add supersedes the live job before it only: a replaced job never counts again.
      if (i > 0) expect(replacedIds(job.unique), `add ${i + 1} replaces the job before it`).to.deep.equal([ids[i - 1]]);
    }
    expect(outcomes).to.deep.equal(expected);
    expect(await ctx.redis.lrange(`${ctx.prefix}:emails:wait`, 0, -1)).to.deep.equal([ids[3]]);
  });

  it('§5.2 replace over a live and a cancelled duplicate (createBullMQBackend): the answer memory gives, one live job, nothing half-done', async function () {
    const bull = createBullMQBackend({ connection: ctx.redis, prefix: ctx.prefix });
    ctx.closeLater(bull);
    const runs = [];
    for (const backend of [createMemoryBackend(), bull]) {
      const label = labeller();
      const job = { type: 'report', args: { n: 1 } };
      const a = await backend.enqueue({ ...job, unique: {} });
      const b = await backend.enqueue({ ...job, unique: { states: ['completed'] } });
      await backend.cancel(b.job.id);
      const c = await attempt(backend, { ...job, unique: { states: ['available', 'cancelled'], on_conflict: 'replace' } });
      const live = await Promise.all(
        [a, b]
          .map((r) => r.job.id)
          .concat(c instanceof Error ? [] : [c.job.id])
          .map((id) => backend.getJob(id)),
      );
      runs.push({
        outcomes: [a, b, c].map(label),
        states: live.map((view) => view?.state),
      });
    }
    expect(runs[0]!.states).to.deep.equal(['cancelled', 'cancelled', 'available']);
    expect(runs[1]).to.deep.equal(runs[0]);
  });

  it("§8.4 a replace that BullMQ's add could not complete is refused before anything is archived (the script checks first)", async function () {
    const raw = ctx.queue('q');
    const queue = withUniqueness(raw);
    const unique = { on_conflict: 'replace' as const };
    const first = await queue.add('a', {}, { unique });
    const other = await queue.add('b', {}, { unique });
    // BullMQ's own deduplication could hand back another job instead of inserting: refused.
    const request = {
      queue: raw,
      name: 'a',
      data: {},
      opts: { deduplication: { id: 'x' } },
      prepared: prepareUnique({ type: 'a', queue: 'q', args: {}, unique })!,
      meta: {},
      cancelledRetentionMs: 0,
    };
    expect(await rejection(uniqueAdd(request))).to.have.property('name', 'InvalidJobInputError');
    // A counter id already taken (the counter set back): BullMQ would return that job, not insert.
    await ctx.redis.set(`${ctx.prefix}:q:id`, String(Number(other.id) - 1));
    const taken = await rejection(queue.add('a', {}, { unique }));
    expect(taken).to.have.property('name', 'BackendError');
    // Refused before any write: the caller may retry.
    expect(taken).to.have.property('written', false);
    expect((await ctx.redis.lrange(`${ctx.prefix}:q:wait`, 0, -1)).sort()).to.deep.equal([first.id, other.id].sort());
    expect(await ctx.redis.exists(`${ctx.prefix}:q:ojs:cancelled:${first.id}`)).to.equal(0);
  });

  it("§4 NFC-equivalent queue names share one key: the second queue finds the first one's job, as on memory (createBullMQBackend)", async function () {
    const bull = createBullMQBackend({ connection: ctx.redis, prefix: ctx.prefix });
    ctx.closeLater(bull);
    const runs = [];
    for (const backend of [createMemoryBackend(), bull]) {
      const label = labeller();
      const results = [];
      for (const [queue, on_conflict] of [
        ['caf\u00e9', 'reject'],
        ['cafe\u0301', 'reject'],
        ['cafe\u0301', 'ignore'],
        ['caf\u00e9', 'replace'],
      ] as const) {
        results.push(label(await attempt(backend, { type: 't', queue, args: {}, unique: { keys: ['type', 'queue'], on_conflict } })));
      }
      runs.push(results);
    }
    expect(runs[0]![1]).to.deep.include({ error: 'DuplicateJobError' });
    expect(runs[1]).to.deep.equal(runs[0]);
  });

  it('§4 NFC-equivalent queue names share one key through withUniqueness too', async function () {
    const composed = withUniqueness(ctx.queue('caf\u00e9'));
    const decomposed = withUniqueness(ctx.queue('cafe\u0301'));
    const unique = { keys: ['type', 'queue'], on_conflict: 'ignore' } as const;
    const first = await composed.add('t', {}, { unique });
    const second = await decomposed.add('t', {}, { unique });
    expect(second.unique).to.deep.include({ outcome: 'deduplicated', existingJobId: first.id });
    expect(await decomposed.getJobCounts('wait')).to.deep.equal({ wait: 0 });
  });

  it('§2.2 a refused add leaves nothing behind: no queue-set entry, no BullMQ meta hash for a queue it never wrote to', async function () {
    const bull = createBullMQBackend({ connection: ctx.redis, prefix: ctx.prefix });
    ctx.closeLater(bull);
    const registry = queueRegistryKey(`${ctx.prefix}:`);
    await bull.enqueue({ type: 't', queue: 'first', id: 'job-1', args: {} });
    await bull.enqueue({ type: 's', queue: 'first', args: {}, unique: {} });
    // A duplicate (the default policy spans queues), an id taken in another queue, a bad policy.
    expect(await rejection(bull.enqueue({ type: 's', queue: 'second', args: {}, unique: {} }))).to.have.property(
      'name',
      'DuplicateJobError',
    );
    expect(await rejection(bull.enqueue({ type: 'u', queue: 'third', id: 'job-1', args: {} }))).to.have.property(
      'name',
      'InvalidJobInputError',
    );
    expect(
      await rejection(bull.enqueue({ type: 'u', queue: 'fourth', args: {}, unique: { on_conflict: 'nope' } as never })),
    ).to.have.property('name', 'InvalidJobInputError');
    expect(await ctx.redis.smembers(registry)).to.have.members(['first']);
    expect(await ctx.redis.exists(`${ctx.prefix}:second:meta`, `${ctx.prefix}:third:meta`, `${ctx.prefix}:fourth:meta`)).to.equal(0);
    expect((await ctx.redis.hgetall(`${ctx.prefix}:first:meta`)).version).to.match(/^bullmq:/);

    const wrapped = withUniqueness(ctx.queue('fifth'));
    await rejection(wrapped.add('s', {}, { unique: {} }));
    expect(await ctx.redis.smembers(registry)).to.not.include('fifth');
    await wrapped.add('v', {}, { unique: {} });
    expect(await ctx.redis.smembers(registry)).to.include('fifth');
  });

  it("a backend queue first added to through withUniqueness still gets BullMQ's meta hash at the backend's first add", async function () {
    const bull = createBullMQBackend({ connection: ctx.redis, prefix: ctx.prefix });
    ctx.closeLater(bull);
    // The backend opens its queues with skipMetasUpdate: the meta hash is written by its first add
    // that wrote. The wrapper's add registers the queue first, without a meta hash.
    await withUniqueness(bull.queue('shared')).add('w', {}, { unique: { keys: ['type'] } });
    expect(await ctx.redis.smembers(queueRegistryKey(`${ctx.prefix}:`))).to.include('shared');
    expect(await ctx.redis.hget(`${ctx.prefix}:shared:meta`, 'version')).to.equal(null);
    await bull.enqueue({ type: 'b', queue: 'shared', args: {} });
    expect(await ctx.redis.hget(`${ctx.prefix}:shared:meta`, 'version')).to.match(/^bullmq:/);
  });
});
