/**
 * `createBullMQBackend(...).enqueueMany`: a batch all-or-nothing in one script (unique-flow, every
 * job a node without a parent). Each job meets the batch's earlier ones as if enqueued one by one;
 * a refusal anywhere writes nothing. Real Redis.
 */
import { expect } from 'chai';
import { createBullMQBackend, type BullMQBackend } from '../../adapters/bullmq/index.js';
import { DuplicateJobError, InvalidJobInputError } from '../../src/index.js';
import type { JobInput } from '../../src/job.js';
import { rejection } from '../conformance/suite-context.js';
import { useRedisPrefix } from './bullmq-test-redis.js';

const job = (n: unknown, unique?: JobInput['unique'], extra: Partial<JobInput> = {}): JobInput => ({
  type: 'batch.job',
  args: { n },
  ...(unique ? { unique } : {}),
  ...extra,
});
const BY_ARGS = { keys: ['type', 'args'] } as const;

describe('bullmq adapter: createBullMQBackend enqueueMany', function () {
  this.timeout(20_000);
  const ctx = useRedisPrefix('bullmq-enqueue-many.test.ts');
  let backend: BullMQBackend;
  beforeEach(function () {
    backend = createBullMQBackend({ connection: ctx.redis, prefix: ctx.prefix });
    ctx.closeLater(backend);
  });
  // Every key there is but BullMQ's meta hashes, which a queue writes when it connects.
  const written = async () => (await ctx.redis.keys(`${ctx.prefix}:*`)).filter((key) => !key.endsWith(':meta')).sort();

  it("§5 results in input order; a job meets the batch's earlier jobs as if enqueued one by one (ignore, replace, update), across queues", async () => {
    const stored = await backend.enqueue(job(1, { ...BY_ARGS, on_conflict: 'ignore' }));
    const update = { keys: ['type'], on_conflict: 'ignore', x_update: { available: ['args'] } } as const;
    const results = await backend.enqueueMany([
      job(1, { ...BY_ARGS, on_conflict: 'ignore' }),
      job(2, { ...BY_ARGS, on_conflict: 'ignore' }),
      job(2, { ...BY_ARGS, on_conflict: 'ignore' }),
      job(3, { ...BY_ARGS, on_conflict: 'replace' }, { queue: 'other' }),
      job(3, { ...BY_ARGS, on_conflict: 'replace' }, { queue: 'other' }),
      job('plain'),
      job(5, update, { type: 'batch.updated' }),
      job(6, update, { type: 'batch.updated', id: 'chosen' }),
    ]);
    expect(results.map((result) => result.outcome)).to.deep.equal([
      'deduplicated',
      'created',
      'deduplicated',
      'created',
      'replaced',
      'created',
      'created',
      'updated',
    ]);
    expect(results[0]!.job.id).to.equal(stored.job.id);
    expect(results[2]!.job.id).to.equal(results[1]!.job.id);
    const replaced = results[4]!;
    expect(replaced.outcome === 'replaced' && replaced.replaced.id).to.equal(results[3]!.job.id);
    expect(results[5]!.job.queue).to.equal('default');
    // x_update met the batch's own job 6: updated in place with job 7's args; the id given is not used.
    expect(results[7]!.job.id).to.equal(results[6]!.job.id);
    expect((await backend.getJob(results[6]!.job.id))!.args).to.deep.equal({ n: 6 });
    expect(await backend.getJob('chosen')).to.equal(null);
  });

  it('§5.1 a reject duplicate anywhere (stored, or earlier in the batch) throws DuplicateJobError and writes nothing', async () => {
    const reject = { ...BY_ARGS, on_conflict: 'reject' } as const;
    const stored = await backend.enqueue(job(0, reject));
    const before = await written();
    const error = await rejection(backend.enqueueMany([job('a'), job(1, reject), job(0, reject)]));
    expect(error).to.be.instanceOf(DuplicateJobError);
    expect((error as unknown as DuplicateJobError).existingJobId).to.equal(stored.job.id);
    const inBatch = await rejection(
      backend.enqueueMany([job('a'), job(5, reject, { queue: 'other' }), job(5, reject, { queue: 'other' })]),
    );
    expect(inBatch).to.be.instanceOf(DuplicateJobError);
    expect(await written()).to.deep.equal(before);
  });

  it('bad input names the job: a policy field, an id given twice, an id taken (in any queue); nothing written', async () => {
    const bad = await rejection(backend.enqueueMany([job(1), job(2, { on_conflict: 'bogus' as never })]));
    expect(bad).to.be.instanceOf(InvalidJobInputError);
    expect((bad as unknown as InvalidJobInputError).issues.map((issue) => issue.path)).to.deep.equal(['[1].unique.on_conflict']);
    const twice = await rejection(backend.enqueueMany([job(1, undefined, { id: 'x1' }), job(2, undefined, { id: 'x1' })]));
    expect((twice as unknown as InvalidJobInputError).issues.map((issue) => issue.path)).to.deep.equal(['[1].id']);
    await backend.enqueue(job(9, undefined, { id: 'taken', queue: 'other' }));
    const before = await written();
    const taken = await rejection(backend.enqueueMany([job(1, BY_ARGS), job(2, undefined, { id: 'taken' })]));
    expect(taken).to.be.instanceOf(InvalidJobInputError);
    expect((taken as unknown as InvalidJobInputError).issues.map((issue) => issue.path)).to.deep.equal(['[1].id']);
    expect(await written()).to.deep.equal(before);
  });

  it('x_update then a job of its key: the later one meets the updated job; a reject there is refused before anything is written; [] is []', async () => {
    const update = { keys: ['type'], on_conflict: 'ignore', x_update: { available: ['args'] } } as const;
    const stored = await backend.enqueue(job(1, update));
    const results = await backend.enqueueMany([job(2, update), job(3, { keys: ['type'], on_conflict: 'ignore' })]);
    expect(results.map((result) => [result.outcome, result.job.id])).to.deep.equal([
      ['updated', stored.job.id],
      ['deduplicated', stored.job.id],
    ]);
    const before = await written();
    const error = await rejection(backend.enqueueMany([job(4, update), job(5, { keys: ['type'], on_conflict: 'reject' })]));
    expect((error as unknown as InvalidJobInputError).issues.map((issue) => issue.path)).to.deep.equal(['[1].unique']);
    expect(await written()).to.deep.equal(before);
    expect((await backend.getJob(stored.job.id))!.args).to.deep.equal({ n: 2 });
    expect(await backend.enqueueMany([])).to.deep.equal([]);
  });
});
