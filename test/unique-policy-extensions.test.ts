/**
 * The policy extensions (x_period_anchor, x_key, x_update) in the spec layer: validation naming
 * the field, the compact form, the caller key's pre-image, the decision, and the refusal by a
 * backend that does not declare them (prepareUnique, the path every adapter enqueues through).
 */
import { expect } from 'chai';
import { createRequire } from 'node:module';
import {
  computeUniquenessKey,
  InvalidJobInputError,
  parseUniquePolicy,
  uniquePolicyJsonSchema,
  type UniquePolicyInput,
} from '../src/index.js';
import {
  compactUniquePolicy,
  decideConflict,
  decideUniqueConflict,
  policyExtensions,
  prepareUnique,
  type ConflictCandidate,
} from '../src/internal.js';

const Ajv2020 = createRequire(import.meta.url)('ajv/dist/2020.js') as typeof import('ajv/dist/2020.js').default;

function issues(input: unknown): string[] {
  try {
    parseUniquePolicy(input);
  } catch (error) {
    if (error instanceof InvalidJobInputError) return error.issues.map((issue) => `${issue.path}: ${issue.message}`);
    throw error;
  }
  return [];
}

const T0 = Date.parse('2026-03-01T10:00:00.000Z');
const candidate = (over: Partial<ConflictCandidate> = {}): ConflictCandidate => ({ id: 'a', state: 'available', created_at: T0, ...over });

describe('policy extensions', function () {
  describe('validation names the field', function () {
    const invalid: [string, unknown, string[]][] = [
      [
        'an unknown anchor',
        { period: 5, x_period_anchor: 'updated_at' },
        ['unique.x_period_anchor: "updated_at" is not one of created_at, scheduled_at, last_duplicate, finished_at'],
      ],
      [
        'an anchor without a period',
        { x_period_anchor: 'last_duplicate' },
        ['unique.x_period_anchor: is set but period is not, so it would be ignored'],
      ],
      [
        'a finished_at anchor without a terminal state',
        { period: 5, x_period_anchor: 'finished_at' },
        [
          'unique.x_period_anchor: "finished_at" needs a terminal state (completed, discarded or cancelled) in states: a live job is a duplicate whatever the period, so it would be ignored',
        ],
      ],
      [
        'a maximum wait without a debounce',
        { x_max_wait: 'PT5M' },
        ['unique.x_max_wait: is set but x_update updates no scheduled_at (the debounce it caps), so it would be ignored'],
      ],
      [
        'a maximum wait over an x_update that leaves scheduled_at',
        { states: ['scheduled'], x_update: { scheduled: ['args'] }, x_max_wait: 60 },
        ['unique.x_max_wait: is set but x_update updates no scheduled_at (the debounce it caps), so it would be ignored'],
      ],
      [
        'a maximum wait that is not a duration',
        { x_update: { scheduled: ['scheduled_at'] }, x_max_wait: '5m' },
        ['unique.x_max_wait: "5m" is not an ISO 8601 duration of the form PnYnMnWnDTnHnMnS (e.g. "PT1H", "P1D", "PT0.5S")'],
      ],
      ['an empty caller key', { x_key: '' }, ['unique.x_key: must not be empty']],
      ['a caller key that is not a string', { x_key: 42 }, ['unique.x_key: expected a string, got number']],
      ['a caller key too long', { x_key: 'k'.repeat(1025) }, ['unique.x_key: must be at most 1024 characters']],
      ['a caller key with U+0000', { x_key: 'a\u0000' }, ['unique.x_key: contains U+0000, which PostgreSQL cannot store']],
      [
        'a caller key with hashed dimensions',
        { x_key: 'k', keys: ['queue', 'args'] },
        ['unique.keys[1]: "args" cannot be hashed with x_key, which replaces the dimensions (only "queue" may scope it)'],
      ],
      [
        'x_update that is not an object',
        { x_update: ['args'] },
        ['unique.x_update: expected an object of states to field lists, got an array'],
      ],
      [
        'x_update for a terminal state',
        { x_update: { completed: ['args'] } },
        ['unique.x_update.completed: not a state x_update can update in (allowed: scheduled, available, pending, active, retryable)'],
      ],
      [
        'x_update of an unknown field',
        { x_update: { scheduled: ['queue'] } },
        ['unique.x_update.scheduled[0]: "queue" is not one of args, meta, priority, max_attempts, scheduled_at'],
      ],
      [
        'x_update with a field twice',
        { x_update: { scheduled: ['args', 'args'] } },
        ['unique.x_update.scheduled[1]: "args" appears more than once'],
      ],
      [
        'x_update with an empty list',
        { x_update: { scheduled: [] } },
        ['unique.x_update.scheduled: must name at least one field (omit the state instead)'],
      ],
      ['x_update naming no state', { x_update: {} }, ['unique.x_update: must name at least one state (omit it instead)']],
      [
        'x_update for a state not checked',
        { states: ['available'], x_update: { scheduled: ['args'] } },
        ['unique.x_update.scheduled: "scheduled" is not in states, so no duplicate in it is ever found and this would be ignored'],
      ],
      [
        'x_successor when states leave out active',
        { states: ['available', 'scheduled'], x_successor: 'latest' },
        ['unique.x_successor: is set but states does not include "active", so no active job is ever a duplicate and it would be ignored'],
      ],
      [
        'x_successor beside x_update.active',
        { x_successor: 'latest', x_update: { active: ['args'] } },
        ['unique.x_successor: and x_update.active both say what a duplicate of an active job does: keep one of them'],
      ],
      ['an unknown x_successor mode', { x_successor: 'first' }, ['unique.x_successor: "first" is not one of latest']],
      [
        'a misspelt extension',
        { x_keys: 'k' },
        [
          'unique.x_keys: unknown field (allowed: keys, args_keys, meta_keys, period, states, on_conflict, x_period_anchor, x_key, x_update, x_max_wait, x_successor)',
        ],
      ],
    ];
    for (const [title, input, expected] of invalid) {
      it(`refuses ${title}`, function () {
        expect(issues(input)).to.deep.equal(expected);
      });
    }

    it('fills in the defaults: no keys with a caller key, the extensions present only when used, x_update fields in canonical order', function () {
      expect(parseUniquePolicy({ x_key: 'k' })).to.deep.equal({
        keys: [],
        args_keys: null,
        meta_keys: null,
        period: null,
        states: ['available', 'active', 'scheduled', 'retryable', 'pending'],
        on_conflict: 'reject',
        x_key: 'k',
      });
      expect(parseUniquePolicy({ period: 5, x_period_anchor: 'created_at' })).to.not.have.property('x_period_anchor');
      expect(parseUniquePolicy({ x_update: { scheduled: ['priority', 'args'] } }).x_update).to.deep.equal({
        scheduled: ['args', 'priority'],
      });
      expect(policyExtensions(parseUniquePolicy({ keys: ['type', 'args'] }))).to.deep.equal([]);
      expect(
        policyExtensions(parseUniquePolicy({ x_key: 'k', period: 1, x_period_anchor: 'scheduled_at', x_update: { available: ['meta'] } })),
      ).to.deep.equal(['x_period_anchor', 'x_key', 'x_update']);
    });

    it('x_max_wait in whole seconds becomes an ISO 8601 duration; both new extensions are named as used', function () {
      const policy = parseUniquePolicy({ states: ['scheduled'], x_update: { scheduled: ['scheduled_at'] }, x_max_wait: 300 });
      expect(policy.x_max_wait).to.equal('PT300S');
      expect(policyExtensions(policy)).to.deep.equal(['x_update', 'x_max_wait']);
      expect(parseUniquePolicy({ period: 5, states: ['completed'], x_period_anchor: 'finished_at' }).x_period_anchor).to.equal(
        'finished_at',
      );
    });

    it('x_successor is kept as given and named as used; the default states include active', function () {
      const policy = parseUniquePolicy({ on_conflict: 'ignore', x_successor: 'latest' });
      expect(policy.x_successor).to.equal('latest');
      expect(policyExtensions(policy)).to.deep.equal(['x_successor']);
      expect(compactUniquePolicy(policy)).to.deep.equal({ on_conflict: 'ignore', x_successor: 'latest' });
    });

    it('the compact form parses back to the same policy', function () {
      const inputs: UniquePolicyInput[] = [
        { x_key: 'k' },
        { x_key: 'k', keys: ['queue'] },
        { period: 'PT2S', x_period_anchor: 'last_duplicate' },
        { x_update: { scheduled: ['args'], retryable: ['scheduled_at'] }, on_conflict: 'ignore' },
      ];
      for (const input of inputs) {
        const policy = parseUniquePolicy(input);
        expect(parseUniquePolicy(compactUniquePolicy(policy))).to.deep.equal(policy);
      }
      expect(compactUniquePolicy(parseUniquePolicy({ x_key: 'k' }))).to.deep.equal({ x_key: 'k' });
    });

    it('the JSON Schema accepts the extensions zod accepts and refuses malformed ones', function () {
      const validate = new Ajv2020({ strict: false }).compile(uniquePolicyJsonSchema);
      const docs: unknown[] = [
        { x_key: 'k' },
        { x_key: '' },
        { x_key: 5 },
        { period: 'PT1H', x_period_anchor: 'scheduled_at' },
        { period: 'PT1H', x_period_anchor: 'later' },
        { x_update: { scheduled: ['args', 'priority'] } },
        { x_update: { scheduled: ['queue'] } },
        { x_update: { finished: ['args'] } },
        { x_update: { scheduled: [] } },
        { x_update: {} },
        { x_successor: 'latest' },
        { x_successor: 'first' },
        { x_successor: true },
      ];
      for (const doc of docs) expect(validate(doc), JSON.stringify(doc)).to.equal(issues(doc).length === 0);
    });
  });

  describe('x_key: the caller key hashed with the §4 algorithm', function () {
    it('the pre-image is the key (and the queue when keys names it), never the type', function () {
      const policy = parseUniquePolicy({ x_key: 'send_email:welcome:42' });
      const a = computeUniquenessKey({ type: 'send_email', args: { a: 1 } }, policy);
      const b = computeUniquenessKey({ type: 'push', args: { b: 2 }, queue: 'other' }, policy);
      expect(a.canonical).to.equal('{"x_key":"send_email:welcome:42"}');
      expect(b.key).to.equal(a.key);
      expect(a.key).to.match(/^[0-9a-f]{64}$/);
      const perQueue = parseUniquePolicy({ x_key: 'k', keys: ['queue'] });
      expect(computeUniquenessKey({ type: 't', args: {} }, perQueue).canonical).to.equal('{"queue":"default","x_key":"k"}');
    });

    it('is written in NFC like every other string of a key', function () {
      const policy = parseUniquePolicy({ x_key: 'cafe\u0301' });
      expect(computeUniquenessKey({ type: 't', args: {} }, policy).canonical).to.equal('{"x_key":"caf\u00e9"}');
    });

    it('never equals a dimension-based key (which always has a type member)', function () {
      const caller = computeUniquenessKey({ type: 't', args: {} }, parseUniquePolicy({ x_key: 't' }));
      const computed = computeUniquenessKey({ type: 't', args: {} }, parseUniquePolicy({}));
      expect(caller.key).to.not.equal(computed.key);
    });
  });

  describe('the decision', function () {
    const decide = (unique: UniquePolicyInput, candidates: ConflictCandidate[], now: number) =>
      decideUniqueConflict({ policy: parseUniquePolicy(unique), uniquenessKey: 'k', now, candidates, canReplaceActive: false });

    it('§7.2 extended: the scheduled_at anchor measures the period from the scheduled time', function () {
      const unique = { period: 'PT10S', x_period_anchor: 'scheduled_at', on_conflict: 'ignore' } as const;
      const scheduled = candidate({ state: 'scheduled', scheduled_at: T0 + 60_000 });
      expect(decide(unique, [scheduled], T0 + 69_999).action).to.equal('ignore');
      expect(decide(unique, [scheduled], T0 + 70_000).action).to.equal('insert');
      expect(decide({ period: 'PT10S', on_conflict: 'ignore' }, [scheduled], T0 + 10_000).action).to.equal('insert');
    });

    it('§7.2 extended: the last_duplicate anchor: the window ends a period after the last duplicate, which the decision asks to record', function () {
      const unique = { period: 'PT10S', x_period_anchor: 'last_duplicate', on_conflict: 'ignore' } as const;
      const first = decide(unique, [candidate()], T0 + 5_000);
      expect(first).to.deep.include({ action: 'ignore', touch: [candidate()] });
      expect(decide(unique, [candidate({ last_duplicate_at: T0 + 5_000 })], T0 + 14_999).action).to.equal('ignore');
      expect(decide(unique, [candidate({ last_duplicate_at: T0 + 5_000 })], T0 + 15_000).action).to.equal('insert');
      const rejected = decide({ ...unique, on_conflict: 'reject' }, [candidate()], T0 + 1);
      expect(rejected).to.have.property('touch');
      expect(decide({ period: 'PT10S', on_conflict: 'ignore' }, [candidate()], T0 + 1)).to.not.have.property('touch');
    });

    it('§7.2 extended: the finished_at anchor: a live job counts however old; a finished one for a period after it finished', function () {
      const unique = {
        period: 'PT10S',
        x_period_anchor: 'finished_at',
        states: ['available', 'active', 'completed'],
        on_conflict: 'ignore',
      } as const;
      expect(decide(unique, [candidate({ state: 'active' })], T0 + 3_600_000).action).to.equal('ignore');
      const done = candidate({ state: 'completed', finished_at: T0 + 60_000 });
      expect(decide(unique, [done], T0 + 69_999).action).to.equal('ignore');
      expect(decide(unique, [done], T0 + 70_000).action).to.equal('insert');
      // Under the spec's anchor the same job's window closed long before.
      expect(decide({ ...unique, x_period_anchor: 'created_at' }, [done], T0 + 60_001).action).to.equal('insert');
    });

    it('x_max_wait: an update of scheduled_at is capped at created_at + the maximum wait; without scheduled_at there is no cap', function () {
      const unique = { states: ['scheduled'], x_update: { scheduled: ['args', 'scheduled_at'] }, x_max_wait: 'PT5M' } as const;
      expect(decide(unique, [candidate({ state: 'scheduled' })], T0 + 1_000)).to.deep.include({
        action: 'update',
        scheduledAtLimit: T0 + 300_000,
      });
      const uncapped = decide({ states: ['scheduled'], x_update: { scheduled: ['args'] } }, [candidate({ state: 'scheduled' })], T0);
      expect(uncapped).to.not.have.property('scheduledAtLimit');
    });

    it('x_update: a duplicate in a listed state is updated; in any other state on_conflict decides', function () {
      const unique = { x_update: { scheduled: ['scheduled_at', 'args'] }, on_conflict: 'reject' } as const;
      expect(decide(unique, [candidate({ state: 'scheduled' })], T0)).to.deep.equal({
        action: 'update',
        existing: candidate({ state: 'scheduled' }),
        fields: ['args', 'scheduled_at'],
      });
      expect(decide(unique, [candidate({ state: 'available' })], T0).action).to.equal('reject');
    });

    it('decideConflict (the spec-only answer adapters without x_update call) refuses a policy that would update', function () {
      const policy = parseUniquePolicy({ x_update: { available: ['args'] } });
      expect(() => decideConflict({ policy, uniquenessKey: 'k', now: T0, candidates: [candidate()], canReplaceActive: false })).to.throw(
        /decideUniqueConflict/,
      );
      expect(decideConflict({ policy, uniquenessKey: 'k', now: T0, candidates: [], canReplaceActive: false })).to.deep.equal({
        action: 'insert',
      });
    });
  });

  describe('a backend that does not declare an extension refuses it (prepareUnique)', function () {
    const job = {
      type: 't',
      args: {},
      unique: { x_key: 'k', period: 5, x_period_anchor: 'last_duplicate', x_update: { available: ['args'] } },
    } as const;

    it('by default, naming every extension field', function () {
      try {
        prepareUnique(job);
        expect.fail('expected a refusal');
      } catch (error) {
        expect(error).to.be.instanceOf(InvalidJobInputError);
        expect((error as InvalidJobInputError).issues.map((issue) => issue.path)).to.deep.equal([
          'unique.x_period_anchor',
          'unique.x_key',
          'unique.x_update',
        ]);
        expect((error as Error).message).to.contain('is an extension this backend does not support (it supports: none)');
      }
    });

    it('only the ones it does not declare', function () {
      expect(() => prepareUnique(job, { extensions: ['x_key'] })).to.throw(InvalidJobInputError, /unique\.x_update/);
      expect(prepareUnique(job, { extensions: ['x_key', 'x_period_anchor', 'x_update'] })?.canonical).to.equal('{"x_key":"k"}');
    });

    it('a period anchored at the scheduled time must end where every backend stores times', function () {
      expect(() =>
        prepareUnique(
          { type: 't', args: {}, scheduled_at: '9999-12-31T00:00:00Z', unique: { period: 'P1Y', x_period_anchor: 'scheduled_at' } },
          { extensions: ['x_period_anchor'] },
        ),
      ).to.throw(InvalidJobInputError, /unique\.period/);
    });
  });
});
