/**
 * The memory backend's policy extensions beyond the reference rows (test/expressiveness): what
 * an update writes and reports, and the last-duplicate window under reject.
 */
import { expect } from 'chai';
import { createMemoryBackend } from '../../adapters/memory/index.js';
import { isDuplicateJobError, isInvalidJobInputError, type EnqueueResult } from '../../src/index.js';

function backendAt(start: number) {
  let now = start;
  const clock = { now: () => now, advance: (ms: number) => void (now += ms) };
  return { backend: createMemoryBackend({ clock }), clock };
}

const T0 = Date.parse('2026-03-01T10:00:00.000Z');

describe('memory backend: policy extensions', function () {
  it('declares every extension', function () {
    expect(createMemoryBackend().capabilities.unique_jobs.extensions).to.deep.equal([
      'x_period_anchor',
      'x_key',
      'x_update',
      'x_max_wait',
      'x_successor',
    ]);
  });

  it('x_update keeps the id and created_at, reports only the fields whose value changed, and re-derives scheduled/available from a new time', async function () {
    const { backend, clock } = backendAt(T0);
    const unique = { keys: ['type'], x_update: { available: ['args', 'priority', 'scheduled_at'] } } as const;
    const first = await backend.enqueue({ type: 't', args: { n: 1 }, priority: 2, unique });
    clock.advance(1_000);
    const same = await backend.enqueue({ type: 't', args: { n: 1 }, priority: 2, scheduled_at: first.job.scheduled_at, unique });
    expect(same).to.deep.include({ outcome: 'updated', changed: [] });
    const later = new Date(T0 + 60_000);
    const moved = await backend.enqueue({ type: 't', args: { n: 2 }, priority: 2, scheduled_at: later, unique });
    expect(moved).to.deep.include({ outcome: 'updated', changed: ['args', 'scheduled_at'] });
    expect(moved.job).to.deep.include({
      id: first.job.id,
      created_at: first.job.created_at,
      state: 'scheduled',
      scheduled_at: later.toISOString(),
    });
    expect(backend.jobs()).to.have.length(1);
  });

  it('x_update on an active job changes its values but not its state', async function () {
    const { backend } = backendAt(T0);
    const unique = { keys: ['type'], x_update: { active: ['max_attempts', 'meta'] } } as const;
    const first = await backend.enqueue({ type: 't', args: {}, unique });
    await backend.fetch();
    const updated = await backend.enqueue({ type: 't', args: {}, max_attempts: 9, meta: { why: 'retry more' }, unique });
    expect(updated).to.deep.include({ outcome: 'updated', changed: ['meta', 'max_attempts'] });
    expect(updated.job).to.deep.include({ id: first.job.id, state: 'active', max_attempts: 9 });
  });

  it('last_duplicate: a rejected duplicate moves the window too (the attempt happened)', async function () {
    const { backend, clock } = backendAt(T0);
    const unique = { keys: ['type'], period: 'PT10S', x_period_anchor: 'last_duplicate' } as const;
    const first = await backend.enqueue({ type: 't', args: {}, unique });
    clock.advance(8_000);
    const error = await backend.enqueue({ type: 't', args: {}, unique }).catch((caught: unknown) => caught);
    expect(isDuplicateJobError(error)).to.equal(true);
    clock.advance(8_000);
    const again = await backend.enqueue({ type: 't', args: {}, unique }).catch((caught: unknown) => caught);
    expect(isDuplicateJobError(again) && again.existingJobId).to.equal(first.job.id);
    clock.advance(10_000);
    expect((await backend.enqueue({ type: 't', args: {}, unique })).outcome).to.equal('created');
  });

  it('x_key: the stored key is the hash, never the caller key', async function () {
    const { backend } = backendAt(T0);
    const result = await backend.enqueue({ type: 't', args: {}, unique: { x_key: 'user:42:welcome' } });
    expect(result.job.uniqueness_key).to.match(/^[0-9a-f]{64}$/);
    expect(result.job.uniqueness_key).to.not.contain('user:42');
  });

  describe('x_successor', function () {
    const unique = { keys: ['type'], on_conflict: 'ignore', x_successor: 'latest' } as const;
    const successorId = (result: EnqueueResult): string | undefined =>
      result.outcome === 'deduplicated' ? result.successor?.id : undefined;

    it('keeps the latest duplicate of the active job, under its own id, and adds it when the job completes; an earlier successor never becomes a job', async function () {
      const { backend } = backendAt(T0);
      const first = await backend.enqueue({ type: 't', args: { v: 1 }, unique });
      await backend.fetch();
      const second = await backend.enqueue({ type: 't', args: { v: 2 }, unique });
      const third = await backend.enqueue({ type: 't', args: { v: 3 }, id: 'chosen', unique });
      expect(second).to.deep.include({ outcome: 'deduplicated' });
      expect(second.job).to.deep.include({ id: first.job.id, state: 'active' });
      expect(successorId(third)).to.equal('chosen');
      expect(await backend.getJob(successorId(second)!)).to.equal(null);
      expect(backend.jobs()).to.have.length(1);
      await backend.ack(first.job.id);
      expect(await backend.getJob('chosen')).to.deep.include({
        state: 'available',
        args: { v: 3 },
        uniqueness_key: first.job.uniqueness_key,
      });
      expect(await backend.getJob(successorId(second)!)).to.equal(null);
      // The successor holds the key now: a duplicate while it waits is answered by on_conflict.
      const after = await backend.enqueue({ type: 't', args: { v: 4 }, unique });
      expect(after).to.deep.include({ outcome: 'deduplicated' });
      expect(after.job.id).to.equal('chosen');
      expect(successorId(after)).to.equal(undefined);
      expect(backend.jobs().map((job) => job.state)).to.deep.equal(['completed', 'available']);
    });

    it('waits for the holder to finish for good: not while it is retryable, but when it is discarded, cancelled or removed', async function () {
      for (const end of ['discard', 'cancel', 'remove'] as const) {
        const { backend } = backendAt(T0);
        const first = await backend.enqueue({ type: 't', args: {}, max_attempts: 2, unique });
        await backend.fetch();
        const dup = await backend.enqueue({ type: 't', args: { v: 2 }, unique });
        await backend.nack(first.job.id);
        expect(await backend.getJob(successorId(dup)!), `${end}: not after a failure with attempts left`).to.equal(null);
        if (end === 'discard') {
          await backend.promote(first.job.id);
          await backend.fetch();
          await backend.nack(first.job.id);
        } else if (end === 'cancel') {
          await backend.cancel(first.job.id);
        } else {
          await backend.remove(first.job.id);
        }
        expect(await backend.getJob(successorId(dup)!), end).to.deep.include({ state: 'available', args: { v: 2 } });
      }
    });

    it("a successor's id is taken: an add naming it is refused while it waits", async function () {
      const { backend } = backendAt(T0);
      await backend.enqueue({ type: 't', args: {}, unique });
      await backend.fetch();
      await backend.enqueue({ type: 't', args: {}, id: 'next', unique });
      const error = await backend.enqueue({ type: 'other', args: {}, id: 'next' }).catch((caught: unknown) => caught);
      expect(isInvalidJobInputError(error)).to.equal(true);
    });

    it('a replace of the holder once it is no longer active drops the pending successor: the new job carries the latest add', async function () {
      const { backend } = backendAt(T0);
      const replacing = { ...unique, on_conflict: 'replace' } as const;
      const first = await backend.enqueue({ type: 't', args: {}, unique: replacing });
      await backend.fetch();
      const dup = await backend.enqueue({ type: 't', args: { v: 2 }, unique: replacing });
      expect(successorId(dup)).to.be.a('string');
      await backend.nack(first.job.id);
      const replaced = await backend.enqueue({ type: 't', args: { v: 3 }, unique: replacing });
      expect(replaced.outcome).to.equal('replaced');
      expect(await backend.getJob(successorId(dup)!)).to.equal(null);
      expect(backend.jobs().map((job) => [job.state, job.args])).to.deep.equal([
        ['cancelled', {}],
        ['available', { v: 3 }],
      ]);
    });

    it('enqueueMany: a batch that fails undoes the successor it left', async function () {
      const { backend } = backendAt(T0);
      const first = await backend.enqueue({ type: 't', args: {}, unique });
      await backend.fetch();
      const kept = await backend.enqueue({ type: 't', args: { v: 'kept' }, unique });
      const error = await backend
        .enqueueMany([
          { type: 't', args: { v: 'undone' }, unique },
          { type: 't', args: {}, unique: { keys: ['type'] } },
        ])
        .catch((caught: unknown) => caught);
      expect(isDuplicateJobError(error)).to.equal(true);
      await backend.ack(first.job.id);
      expect(await backend.getJob(successorId(kept)!)).to.deep.include({ args: { v: 'kept' } });
    });

    it('explain says a duplicate of the active job would be kept as its successor; report-only says it would be deduplicated', async function () {
      const { backend } = backendAt(T0);
      const first = await backend.enqueue({ type: 't', args: {}, unique });
      await backend.fetch();
      const explained = await backend.explainUnique({ type: 't', args: {}, unique });
      expect(explained).to.deep.include({ outcome: 'deduplicated', existing_job_id: first.job.id, successor: true });
      const reportOnly = { ...unique, x_report_only: true };
      const watched = await backend.enqueue({ type: 'r', args: {}, unique: reportOnly });
      await backend.fetch();
      expect(await backend.enqueue({ type: 'r', args: {}, unique: reportOnly })).to.deep.include({
        outcome: 'created',
        wouldBe: 'deduplicated',
        existingJobId: watched.job.id,
        existingJobState: 'active',
      });
    });
  });
});
