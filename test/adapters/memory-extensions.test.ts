/**
 * The memory backend's policy extensions beyond the reference rows (test/expressiveness): what
 * an update writes and reports, and the last-duplicate window under reject.
 */
import { expect } from 'chai';
import { createMemoryBackend } from '../../adapters/memory/index.js';
import { isDuplicateJobError } from '../../src/index.js';

function backendAt(start: number) {
  let now = start;
  const clock = { now: () => now, advance: (ms: number) => void (now += ms) };
  return { backend: createMemoryBackend({ clock }), clock };
}

const T0 = Date.parse('2026-03-01T10:00:00.000Z');

describe('memory backend: policy extensions', function () {
  it('declares every extension', function () {
    expect(createMemoryBackend().capabilities.unique_jobs.extensions).to.deep.equal(['x_period_anchor', 'x_key', 'x_update', 'x_max_wait']);
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
});
