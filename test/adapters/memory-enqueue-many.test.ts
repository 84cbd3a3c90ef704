/**
 * The memory backend's `enqueueMany`: all-or-nothing. With `latencyMs` every storage step is a
 * timed round trip, so a fetch polling beside the batch really runs between its writes.
 */
import { expect } from 'chai';
import { createMemoryBackend, type MemoryBackend } from '../../adapters/memory/index.js';
import { DuplicateJobError, InvalidJobInputError } from '../../src/errors.js';
import type { JobInput } from '../../src/job.js';

const job = (n: number, unique?: JobInput['unique']): JobInput => ({ type: 'batch.job', args: { n }, ...(unique ? { unique } : {}) });

/** Polls `fetch` until `work` settles; every job it took. */
async function pollWhile(backend: MemoryBackend, work: Promise<unknown>): Promise<string[]> {
  let settled = false;
  void work.then(
    () => (settled = true),
    () => (settled = true),
  );
  const taken: string[] = [];
  while (!settled) {
    const fetched = await backend.fetch();
    if (fetched) taken.push(fetched.id);
    else await new Promise((resolve) => setTimeout(resolve, 0));
  }
  return taken;
}

describe('memory backend: enqueueMany', () => {
  it('a reject duplicate part-way undoes the batch: a worker polling throughout never fetches one of its jobs', async () => {
    const backend = createMemoryBackend({ latencyMs: 1 });
    const existing = await backend.enqueue(job(0, { keys: ['type', 'args'], on_conflict: 'reject' }));
    const batch = backend.enqueueMany([
      ...Array.from({ length: 20 }, (_, i) => job(i + 1)),
      job(0, { keys: ['type', 'args'], on_conflict: 'reject' }),
    ]);
    const taken = await pollWhile(backend, batch);
    const error = await batch.then(
      () => null,
      (caught: unknown) => caught,
    );
    expect(error).to.be.instanceOf(DuplicateJobError);
    expect(taken.filter((id) => id !== existing.job.id)).to.deep.equal([]);
    expect(backend.jobs().map((j) => j.id)).to.deep.equal([existing.job.id]);
  });

  it('undoes a replace and an update the batch made before the failure', async () => {
    const backend = createMemoryBackend();
    const replaced = await backend.enqueue(job(1, { keys: ['type', 'args'], on_conflict: 'replace' }));
    const updated = await backend.enqueue({
      ...job(2, { keys: ['type', 'args'], on_conflict: 'ignore', x_update: { available: ['priority'] } }),
      priority: 1,
    });
    await backend.enqueue(job(3, { keys: ['type', 'args'], on_conflict: 'reject' }));
    const before = backend.jobs();
    const error = await backend
      .enqueueMany([
        job(1, { keys: ['type', 'args'], on_conflict: 'replace' }),
        { ...job(2, { keys: ['type', 'args'], on_conflict: 'ignore', x_update: { available: ['priority'] } }), priority: 5 },
        job(3, { keys: ['type', 'args'], on_conflict: 'reject' }),
      ])
      .then(
        () => null,
        (caught: unknown) => caught,
      );
    expect(error).to.be.instanceOf(DuplicateJobError);
    expect(backend.jobs()).to.deep.equal(before);
    expect((await backend.getJob(replaced.job.id))!.state).to.equal('available');
    expect((await backend.getJob(updated.job.id))!.priority).to.equal(1);
  });

  it('succeeds with one outcome per job, in order; a later job meets an earlier one of the batch', async () => {
    const backend = createMemoryBackend({ latencyMs: 1 });
    const results = await backend.enqueueMany([
      job(1, { keys: ['type', 'args'] }),
      job(2),
      job(1, { keys: ['type', 'args'], on_conflict: 'ignore' }),
    ]);
    expect(results.map((result) => result.outcome)).to.deep.equal(['created', 'created', 'deduplicated']);
    expect(results[2]!.job.id).to.equal(results[0]!.job.id);
    expect(backend.jobs()).to.have.length(2);
  });

  it('refuses a bad job or a taken or repeated id before writing, naming the index', async () => {
    const backend = createMemoryBackend();
    const first = await backend.enqueue(job(1));
    const bad = await backend.enqueueMany([job(2), job(3, { period: 'soon' } as never)]).then(
      () => null,
      (caught: unknown) => caught as InvalidJobInputError,
    );
    expect(bad).to.be.instanceOf(InvalidJobInputError);
    expect(bad!.issues[0]!.path).to.match(/^\[1\]\.unique/);
    const taken = await backend.enqueueMany([job(2), { ...job(3), id: first.job.id }]).then(
      () => null,
      (caught: unknown) => caught as InvalidJobInputError,
    );
    expect(taken!.issues).to.deep.equal([{ path: '[1].id', message: 'a job with this id already exists' }]);
    expect(backend.jobs()).to.have.length(1);
  });
});

describe('memory backend: enqueueMany and duplicate counts', () => {
  it("a duplicate in a batch counts on the job it met; a refused batch's counts are undone with its other writes", async () => {
    const backend = createMemoryBackend({ latencyMs: 1, countDuplicates: true });
    const ignore = { keys: ['type', 'args'], on_conflict: 'ignore' } as const;
    const stored = await backend.enqueue(job(1, ignore));
    const [again, second] = await backend.enqueueMany([job(1, ignore), job(2, ignore)]);
    expect(again!.job).to.include({ id: stored.job.id, duplicate_count: 1 });
    const counted = await backend.getJob(stored.job.id);
    // Two duplicates counted before the reject refuses the batch (one on the job a reject meets).
    const error = await backend
      .enqueueMany([job(1, ignore), job(1, ignore), job(2, { ...ignore, on_conflict: 'reject' })])
      .catch((caught: unknown) => caught);
    expect(error).to.be.instanceOf(DuplicateJobError);
    expect(await backend.getJob(stored.job.id)).to.deep.equal(counted);
    expect((await backend.getJob(stored.job.id))!.duplicate_count).to.equal(1);
    expect((await backend.getJob(second!.job.id))!.duplicate_count, 'nor the job that refused it').to.equal(undefined);
  });

  it('countDuplicates off (the default): enqueue and enqueueMany count nothing; neither field on the job', async () => {
    const backend = createMemoryBackend();
    const ignore = { keys: ['type', 'args'], on_conflict: 'ignore' } as const;
    const stored = await backend.enqueue(job(1, ignore));
    const again = await backend.enqueue(job(1, ignore));
    const [inBatch] = await backend.enqueueMany([job(1, ignore)]);
    const reject = { keys: ['type', 'args'], on_conflict: 'reject' } as const;
    expect(await backend.enqueue(job(1, reject)).catch((caught: unknown) => caught)).to.be.instanceOf(DuplicateJobError);
    for (const view of [again.job, inBatch!.job, (await backend.getJob(stored.job.id))!]) {
      expect(view.id).to.equal(stored.job.id);
      expect(view).to.not.have.any.keys('duplicate_count', 'last_duplicate_at');
    }
  });
});
