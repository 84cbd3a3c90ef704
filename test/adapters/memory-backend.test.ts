import { expect } from 'chai';
import { isInvalidJobInputError } from '../../src/index.js';
import { createMemoryBackend, type MemoryBackendOptions } from '../../adapters/memory/index.js';

function backendAt(start = Date.parse('2026-02-12T10:00:00.000Z'), options: MemoryBackendOptions = {}) {
  let now = start;
  const clock = { now: () => now, advance: (ms: number) => void (now += ms) };
  return { backend: createMemoryBackend({ clock, ...options }), clock };
}

describe('memory backend: lifecycle and options beyond the conformance suite', function () {
  it('declares strong uniqueness and its mechanism', function () {
    expect(createMemoryBackend().capabilities.unique_jobs).to.deep.equal({
      strength: 'strong',
      mechanism: 'in-process per-key mutex around check-and-insert',
      replace_active: false,
      extensions: ['x_period_anchor', 'x_key', 'x_update', 'x_max_wait', 'x_successor'],
    });
  });

  it('ojs-core §6: scheduled -> available when due, fetch -> active, nack -> retryable -> available, ack -> completed', async function () {
    const { backend, clock } = backendAt(undefined, { retryDelayMs: () => 1000 });
    const { job } = await backend.enqueue({ type: 'a.b', args: [], scheduled_at: new Date(clock.now() + 5000) });
    expect(job.state).to.equal('scheduled');
    expect(await backend.fetch()).to.equal(null);
    clock.advance(5000);
    expect((await backend.getJob(job.id))!.state).to.equal('available');
    expect(await backend.fetch()).to.deep.include({ id: job.id, state: 'active', attempt: 1 });
    expect((await backend.nack(job.id, { message: 'boom' })).state).to.equal('retryable');
    clock.advance(999);
    expect(await backend.fetch()).to.equal(null);
    clock.advance(1);
    expect(await backend.fetch()).to.deep.include({ id: job.id, attempt: 2 });
    const done = await backend.ack(job.id);
    expect(done).to.deep.include({ state: 'completed', completed_at: new Date(clock.now()).toISOString() });
  });

  it('ojs-core §6: pending until activated; pending holds the key under the default states', async function () {
    const { backend } = backendAt();
    const { job } = await backend.enqueue({ type: 'a.b', args: [], pending: true, unique: {} });
    expect(job.state).to.equal('pending');
    const error = await backend.enqueue({ type: 'a.b', args: [], unique: {} }).catch((e) => e);
    expect(error).to.include({ code: 'duplicate', existingJobState: 'pending' });
    expect((await backend.activate(job.id)).state).to.equal('available');
  });

  it('fetch takes higher priority first, then the oldest', async function () {
    const { backend } = backendAt();
    const low = await backend.enqueue({ type: 'a.b', args: [1] });
    const high = await backend.enqueue({ type: 'a.b', args: [2], priority: 5 });
    expect((await backend.fetch())!.id).to.equal(high.job.id);
    expect((await backend.fetch())!.id).to.equal(low.job.id);
  });

  it('concurrent fetches never take the same job twice', async function () {
    const { backend } = backendAt();
    for (let i = 0; i < 20; i++) await backend.enqueue({ type: 'a.b', args: [i], unique: { keys: ['args'] } });
    const fetched = await Promise.all(Array.from({ length: 30 }, () => backend.fetch()));
    const ids = fetched.flatMap((job) => (job ? [job.id] : []));
    expect(ids).to.have.length(20);
    expect(new Set(ids).size).to.equal(20);
  });

  it('ojs-core §6.3: cancelling a terminal job is an invalid transition; an unknown id is not found', async function () {
    const { backend } = backendAt();
    const { job } = await backend.enqueue({ type: 'a.b', args: [] });
    await backend.cancel(job.id);
    expect(await backend.cancel(job.id).catch((e) => e)).to.include({ code: 'invalid_transition', from: 'cancelled', to: 'cancelled' });
    expect(await backend.cancel('nope').catch((e) => e)).to.include({ code: 'not_found' });
    expect(await backend.ack(job.id).catch((e) => e)).to.include({ code: 'invalid_transition' });
  });

  it('ojs-core §6 manual retry: a discarded job is available again with attempt 0 and holds its key again', async function () {
    const { backend } = backendAt();
    const unique = { keys: ['type'] } as const;
    const { job } = await backend.enqueue({ type: 'a.b', args: [], unique, max_attempts: 1 });
    await backend.fetch();
    expect((await backend.nack(job.id)).state).to.equal('discarded');
    // Seen finished by an add first, so the retry has to bring it back from the finished jobs.
    const other = await backend.enqueue({ type: 'a.b', args: [], unique });
    await backend.cancel(other.job.id);
    const retried = await backend.retry(job.id);
    expect(retried).to.include({ state: 'available', attempt: 0 });
    expect(retried).to.not.have.property('completed_at');
    expect(await backend.enqueue({ type: 'a.b', args: [], unique }).catch((e) => e)).to.include({ existingJobId: job.id });
    expect(await backend.retry(job.id).catch((e) => e)).to.include({ code: 'invalid_transition', from: 'available' });
    expect(await backend.retry('nope').catch((e) => e)).to.include({ code: 'not_found' });
  });

  it('manual retry of a job a replace superseded brings it back without its key', async function () {
    const { backend } = backendAt();
    const all = ['available', 'scheduled', 'active', 'retryable', 'pending', 'discarded'] as const;
    const { job } = await backend.enqueue({ type: 'a.b', args: [], unique: { states: [...all] }, max_attempts: 1 });
    await backend.fetch();
    await backend.nack(job.id);
    const replacing = await backend.enqueue({ type: 'a.b', args: [], unique: { states: [...all], on_conflict: 'replace' } });
    expect(replacing).to.deep.include({ outcome: 'replaced' });
    await backend.cancel(replacing.job.id);
    await backend.retry(job.id);
    expect((await backend.enqueue({ type: 'a.b', args: [], unique: { keys: ['type'] } })).outcome).to.equal('created');
  });

  it('remove deletes a job that is not running: not found, counted by no policy, its id free again', async function () {
    const { backend } = backendAt();
    const wide = { states: ['available', 'completed'] } as const;
    const { job } = await backend.enqueue({ type: 'a.b', args: [], unique: wide, id: 'job-a' });
    await backend.fetch();
    expect(await backend.remove(job.id).catch((e) => e)).to.include({ code: 'invalid_transition' });
    await backend.ack(job.id);
    await backend.remove(job.id);
    expect(await backend.getJob(job.id)).to.equal(null);
    expect(await backend.remove(job.id).catch((e) => e)).to.include({ code: 'not_found' });
    expect((await backend.enqueue({ type: 'a.b', args: [], unique: wide, id: 'job-a' })).outcome).to.equal('created');
    expect(backend.jobs()).to.have.length(1);
  });

  it("§5.2 with replaceActive the active job is cancelled and its worker's ack is refused", async function () {
    const { backend } = backendAt(undefined, { replaceActive: true });
    const unique = { on_conflict: 'replace' } as const;
    const { job } = await backend.enqueue({ type: 'a.b', args: [1], unique });
    await backend.fetch();
    const result = await backend.enqueue({ type: 'a.b', args: [2], unique });
    expect(result.outcome).to.equal('replaced');
    if (result.outcome === 'replaced')
      expect(result.replaced).to.deep.include({ id: job.id, state: 'cancelled', replaced_by: result.job.id });
    expect(await backend.ack(job.id).catch((e) => e)).to.include({ code: 'invalid_transition', from: 'cancelled' });
  });

  it('refuses invalid job fields with every path named, the policy ones too, and writes nothing', async function () {
    const { backend } = backendAt();
    const error = await backend
      .enqueue({
        type: '',
        args: [],
        queue: '',
        max_attempts: 0,
        priority: 1.5,
        scheduled_at: '2026-02-12 10:00',
        meta: [] as never,
        unique: { keys: ['argz'] } as never,
      })
      .catch((e) => e);
    expect(isInvalidJobInputError(error)).to.equal(true);
    expect(error.issues.map((i: { path: string }) => i.path)).to.deep.equal([
      'type',
      'queue',
      'meta',
      'max_attempts',
      'priority',
      'scheduled_at',
      'unique.keys[0]',
    ]);
    expect(backend.jobs()).to.deep.equal([]);
  });

  it('refuses a job id that already exists', async function () {
    const { backend } = backendAt();
    await backend.enqueue({ type: 'a.b', args: [], id: 'fixed' });
    expect(await backend.enqueue({ type: 'a.b', args: [], id: 'fixed' }).catch((e) => e)).to.include({ code: 'invalid_request' });
  });

  it('stores args as given (the NFC form is only hashed, never written back)', async function () {
    const { backend } = backendAt();
    const { job } = await backend.enqueue({ type: 'a.b', args: { name: 'Jose\u0301' }, unique: { keys: ['args'] } });
    expect(job.args).to.deep.equal({ name: 'Jose\u0301' });
  });

  it('latencyMs makes each storage step a timed round trip and stays strong', async function () {
    const { backend } = backendAt(undefined, { latencyMs: 2 });
    const results = await Promise.allSettled(Array.from({ length: 20 }, () => backend.enqueue({ type: 'a.b', args: [], unique: {} })));
    expect(results.filter((r) => r.status === 'fulfilled')).to.have.length(1);
  });

  it('ids are UUIDv7 stamped with the backend clock', async function () {
    const { backend, clock } = backendAt();
    const { job } = await backend.enqueue({ type: 'a.b', args: [] });
    expect(job.id).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(parseInt(job.id.replace(/-/g, '').slice(0, 12), 16)).to.equal(clock.now());
  });
});
