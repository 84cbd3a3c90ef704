import { expect } from 'chai';
import { isInvalidJobInputError, type ValidationIssue } from '../../src/index.js';
import { TIME_RANGE_MS } from '../../src/internal.js';
import { createMemoryBackend } from '../../adapters/memory/index.js';
import { base, invalidJobs, pathMatches, validJobs } from '../portable-input-cases.js';

describe('memory backend: the portable input rules (the reference answers)', function () {
  describe('each bad job is an invalid_request naming its field, and nothing is written', function () {
    for (const [title, job, path] of invalidJobs) {
      it(title, async function () {
        const backend = createMemoryBackend();
        const error = await backend.enqueue(job).then(
          () => null,
          (e: unknown) => e,
        );
        expect(isInvalidJobInputError(error), String(error)).to.equal(true);
        const issues = (error as { issues: ValidationIssue[] }).issues;
        expect(issues).to.have.length(1);
        expect(pathMatches(issues[0]!.path, path), `${issues[0]!.path}: ${issues[0]!.message}`).to.equal(true);
        expect(backend.jobs()).to.deep.equal([]);
      });
    }
  });

  describe('jobs at the limits are stored as given', function () {
    for (const [title, job] of validJobs) {
      it(title, async function () {
        const backend = createMemoryBackend();
        const { outcome, job: stored } = await backend.enqueue(job);
        expect(outcome).to.equal('created');
        expect(stored.args).to.deep.equal(job.args);
        expect(backend.jobs()).to.have.length(1);
      });
    }
  });

  it('§7 a long period is checked on the backend clock and never poisons its key', async function () {
    const backend = createMemoryBackend();
    const job = { ...base, unique: { period: 'P7000Y', on_conflict: 'ignore' } } as const;
    expect((await backend.enqueue(job)).outcome).to.equal('created');
    expect((await backend.enqueue(job)).outcome).to.equal('deduplicated');
    expect((await backend.enqueue({ ...job, unique: { period: 'PT1S', on_conflict: 'replace' } })).outcome).to.equal('replaced');

    const late = createMemoryBackend({ clock: { now: () => TIME_RANGE_MS.max - 1000 } });
    expect((await late.enqueue({ ...base, unique: { period: 'PT1S' } })).outcome).to.equal('created');
    const error = await late.enqueue({ ...base, type: 'other', unique: { period: 'PT2S' } }).catch((e: unknown) => e);
    expect((error as { issues: ValidationIssue[] }).issues.map((issue) => issue.path)).to.deep.equal(['unique.period']);
    expect(late.jobs()).to.have.length(1);
  });

  it('§2.2 unique: null is a plain job: no policy, no key, never deduplicated', async function () {
    const backend = createMemoryBackend();
    const first = await backend.enqueue({ ...base, unique: null });
    const second = await backend.enqueue({ ...base, unique: null });
    for (const result of [first, second]) {
      expect(result.outcome).to.equal('created');
      expect(result.job.unique).to.equal(null);
      expect(result.job.uniqueness_key).to.equal(null);
    }
  });

  it("§2.2 reads only the job's own properties (a polluted Object.prototype adds no field)", async function () {
    const backend = createMemoryBackend();
    Object.defineProperty(Object.prototype, 'queue', { value: 'polluted', configurable: true, writable: true });
    Object.defineProperty(Object.prototype, 'unique', { value: { on_conflict: 'replace' }, configurable: true, writable: true });
    try {
      const { job } = await backend.enqueue({ type: 'a.b', args: {} });
      expect(job.queue).to.equal('default');
      expect(job.unique).to.equal(null);
    } finally {
      delete (Object.prototype as Record<string, unknown>).queue;
      delete (Object.prototype as Record<string, unknown>).unique;
    }
  });
});
