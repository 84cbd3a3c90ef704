import { expect } from 'chai';
import { computeUniquenessKey, isInvalidJobInputError, parseUniquePolicy, type JobInput, type ValidationIssue } from '../src/index.js';
import { decideConflict, jobInputIssues, prepareUnique, TIME_RANGE_MS } from '../src/internal.js';
import { base, invalidJobs, nestedArray, pathMatches, validJobs } from './portable-input-cases.js';

function issuesOf(run: () => unknown): ValidationIssue[] {
  let thrown: unknown;
  try {
    run();
  } catch (error) {
    thrown = error;
  }
  expect(isInvalidJobInputError(thrown), `expected an invalid_request, got ${String(thrown)}`).to.equal(true);
  return [...(thrown as { issues: ValidationIssue[] }).issues];
}

/** Runs `body` with `Object.prototype[name]` (or another prototype's) set, and always removes it. */
function withPolluted(proto: object, name: PropertyKey, value: unknown, body: () => void): void {
  Object.defineProperty(proto, name, { value, configurable: true, writable: true, enumerable: false });
  try {
    body();
  } finally {
    delete (proto as Record<PropertyKey, unknown>)[name];
  }
}

describe('portable input rules (prepareUnique)', function () {
  describe('each bad job is an invalid_request naming its field', function () {
    for (const [title, job, path] of invalidJobs) {
      it(title, function () {
        const issues = issuesOf(() => prepareUnique(job));
        expect(issues, JSON.stringify(issues)).to.have.length(1);
        expect(pathMatches(issues[0]!.path, path), `${issues[0]!.path}: ${issues[0]!.message}`).to.equal(true);
      });
    }
  });

  describe('jobs at the limits are accepted', function () {
    for (const [title, job] of validJobs) {
      it(title, function () {
        expect(prepareUnique(job)).to.have.property('key').that.is.a('string');
      });
    }
  });

  it('§4 a 2,000-level nesting is a typed error naming the path, never a RangeError, in every function that walks it', function () {
    const deep = nestedArray(2000);
    const messages = [
      issuesOf(() => prepareUnique({ ...base, args: deep })),
      issuesOf(() => computeUniquenessKey({ ...base, args: deep }, parseUniquePolicy({ keys: ['args'] }))),
    ].map((issues) => issues[0]!.message);
    for (const message of messages) expect(message).to.match(/nested deeper than \d+ levels/);
    expect(jobInputIssues({ ...base, args: deep })[0]!.path).to.match(/^args\[0\]/);
  });

  it('§4 a cycle is reported where it first repeats, not at the depth limit', function () {
    const args: Record<string, unknown> = { list: [] };
    (args.list as unknown[]).push({ back: args });
    expect(issuesOf(() => prepareUnique({ ...base, args }))[0]).to.deep.equal({ path: 'args.list[0].back', message: 'circular reference' });
  });

  it('§2.2 every problem of the job and of its policy is reported at once', function () {
    const issues = issuesOf(() =>
      prepareUnique({ type: '', args: { n: Number.NaN }, queue: 'a:b', id: '12', unique: { keys: ['argz'] } as never }),
    );
    expect(issues.map((issue) => issue.path)).to.deep.equal(['type', 'queue', 'id', 'args.n', 'unique.keys[0]']);
  });

  it('§7 created_at + period is checked from the time the job is created (the optional now)', function () {
    const job = { ...base, unique: { period: 'P8000Y' } } as const;
    // The policy alone is valid: 8,000 years from 1970 end before year 10000.
    expect(parseUniquePolicy(job.unique).period).to.equal('P8000Y');
    expect(prepareUnique(job, { now: 0 })).to.have.property('key');
    expect(issuesOf(() => prepareUnique(job, { now: Date.UTC(2026, 0, 1) }))[0]!.path).to.equal('unique.period');
    // Exactly at the end of year 9999 is still representable; one second past it is not.
    expect(prepareUnique({ ...base, unique: { period: 'PT1S' } }, { now: TIME_RANGE_MS.max - 1000 })).to.have.property('key');
    expect(issuesOf(() => prepareUnique({ ...base, unique: { period: 'PT2S' } }, { now: TIME_RANGE_MS.max - 1000 }))[0]!.path).to.equal(
      'unique.period',
    );
  });

  it('§7.4 a window whose end no date can hold never closes: deciding never throws for a stored job', function () {
    const policy = parseUniquePolicy({ period: 'P7000Y', on_conflict: 'ignore' });
    const createdAt = Date.UTC(270000, 0, 1); // only a job stored by an older version can carry this
    const candidates = [{ id: 'old', state: 'available' as const, created_at: createdAt, scheduled_at: createdAt }];
    const decision = decideConflict({ policy, uniquenessKey: 'k', now: createdAt + 1, candidates, canReplaceActive: false });
    expect(decision.action).to.equal('ignore');
  });

  describe('§2.2 only own properties of the job and of the policy are read', function () {
    it('an inherited on_conflict does not make {} a replace policy', function () {
      withPolluted(Object.prototype, 'on_conflict', 'replace', () => {
        expect(parseUniquePolicy({}).on_conflict).to.equal('reject');
      });
    });

    it("inherited states, period and meta_keys are not the policy's", function () {
      withPolluted(Object.prototype, 'states', ['completed'], () => {
        withPolluted(Object.prototype, 'period', 'PT1S', () => {
          withPolluted(Object.prototype, 'meta_keys', ['x'], () => {
            const policy = parseUniquePolicy({ on_conflict: 'ignore' });
            expect(policy.states).to.deep.equal(['available', 'active', 'scheduled', 'retryable', 'pending']);
            expect(policy.period).to.equal(null);
            expect(policy.meta_keys).to.equal(null);
          });
        });
      });
    });

    it("an inherited unique is no policy; an inherited queue is not the job's queue", function () {
      withPolluted(Object.prototype, 'unique', { on_conflict: 'replace' }, () => {
        expect(prepareUnique({ type: 'a.b', args: {} })).to.equal(null);
      });
      withPolluted(Object.prototype, 'queue', 'polluted', () => {
        expect(prepareUnique({ type: 'a.b', args: {}, unique: { keys: ['queue'] } })!.canonical).to.equal(
          '{"queue":"default","type":"a.b"}',
        );
        expect(computeUniquenessKey({ type: 'a.b', args: {} }, parseUniquePolicy({ keys: ['queue'] })).canonical).to.equal(
          '{"queue":"default","type":"a.b"}',
        );
      });
    });

    it('a hole in a policy array is refused, not read from Array.prototype', function () {
      withPolluted(Array.prototype, 0, 'args', () => {
        const keys = [, 'type']; // eslint-disable-line no-sparse-arrays
        expect(issuesOf(() => parseUniquePolicy({ keys }))[0]!.path).to.equal('unique.keys[0]');
      });
    });

    it('args_keys do not select from an inherited args[0]', function () {
      withPolluted(Array.prototype, 0, { id: 1 }, () => {
        const args = [, 'x']; // eslint-disable-line no-sparse-arrays
        const unique = { keys: ['args'], args_keys: ['id'] } as const;
        expect(issuesOf(() => prepareUnique({ type: 'a.b', args, unique }))[0]).to.deep.equal({
          path: 'args[0]',
          message: 'array hole is not a JSON value',
        });
        expect(issuesOf(() => computeUniquenessKey({ type: 'a.b', args }, parseUniquePolicy(unique)))[0]!.path).to.equal(
          'unique.args_keys',
        );
      });
    });
  });

  it('§2.2 args_keys and meta_keys items are stored with the policy: no U+0000, no lone surrogate', function () {
    expect(issuesOf(() => parseUniquePolicy({ keys: ['meta'], meta_keys: ['ok', 'a\u0000'] }))).to.deep.equal([
      { path: 'unique.meta_keys[1]', message: 'contains U+0000, which PostgreSQL cannot store in jsonb' },
    ]);
    expect(issuesOf(() => parseUniquePolicy({ keys: ['args'], args_keys: ['\uD800'] }))[0]!.path).to.equal('unique.args_keys[0]');
  });

  describe('§2.2 unique: null is no policy', function () {
    it('null and undefined give a plain job; the job is still checked', function () {
      expect(prepareUnique({ ...base, unique: null })).to.equal(null);
      expect(prepareUnique({ ...base, unique: undefined })).to.equal(null);
      expect(issuesOf(() => prepareUnique({ ...base, unique: null, args: { n: Number.NaN } }))[0]!.path).to.equal('args.n');
    });
  });

  it('§2.2 50,000 args_keys are validated and hashed (in one pass each; repeated items are still found)', function () {
    const keys = Array.from({ length: 50_000 }, (_, i) => `k${i}`);
    const args = Object.fromEntries(keys.map((key) => [key, 1]));
    const prepared = prepareUnique({ type: 'a.b', args, unique: { keys: ['args'], args_keys: keys } })!;
    expect(prepared.policy.args_keys).to.have.length(50_000);
    expect(prepared.canonical.startsWith('{"args":{"k0":1,"k1":1,"k10":1,')).to.equal(true);
    const repeated = [...keys, 'k7'];
    expect(issuesOf(() => parseUniquePolicy({ keys: ['args'], args_keys: repeated }))).to.deep.equal([
      { path: 'unique.args_keys[50000]', message: '"k7" appears more than once' },
    ]);
  });
});

describe("portable input rules: jobInputIssues agrees with prepareUnique on the job's own fields", function () {
  for (const [title, job, path] of invalidJobs.filter(
    ([, j]) => !JSON.stringify(j.unique ?? {}).includes('_keys') && !JSON.stringify(j.unique ?? {}).includes('period'),
  )) {
    it(title, function () {
      const issues = jobInputIssues(job as JobInput);
      expect(issues).to.have.length(1);
      expect(pathMatches(issues[0]!.path, path), issues[0]!.path).to.equal(true);
    });
  }
});
