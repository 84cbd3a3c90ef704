import { expect } from 'chai';
import { seededRandom } from './seeded-random.js';
import {
  DEFAULT_UNIQUE_STATES,
  InvalidJobInputError,
  UNIQUE_STATE_GROUPS,
  isInvalidJobInputError,
  parseUniquePolicy,
} from '../src/index.js';
import { compactUniquePolicy } from '../src/internal.js';

function issues(input: unknown, job?: { args: unknown; meta?: Record<string, unknown> }): string[] {
  try {
    parseUniquePolicy(input, job);
  } catch (error) {
    expect(isInvalidJobInputError(error)).to.equal(true);
    expect((error as InvalidJobInputError).code).to.equal('invalid_request');
    return (error as InvalidJobInputError).issues.map((i) => `${i.path}: ${i.message}`);
  }
  throw new Error('expected InvalidJobInputError');
}

describe('§2 UniquePolicy parsing', function () {
  it('§2.1 defaults: keys ["type"], args_keys/meta_keys/period null, the five default states, reject', function () {
    expect(parseUniquePolicy({})).to.deep.equal({
      keys: ['type'],
      args_keys: null,
      meta_keys: null,
      period: null,
      states: ['available', 'active', 'scheduled', 'retryable', 'pending'],
      on_conflict: 'reject',
    });
    expect(DEFAULT_UNIQUE_STATES).to.deep.equal(['available', 'active', 'scheduled', 'retryable', 'pending']);
  });

  it('§2.1 accepts null for args_keys, meta_keys and period (their documented default)', function () {
    expect(parseUniquePolicy({ args_keys: null, meta_keys: null, period: null, keys: ['args'] })).to.include({
      args_keys: null,
      period: null,
    });
  });

  it('keeps every field the caller gave', function () {
    const policy = {
      keys: ['type', 'queue', 'args', 'meta'],
      args_keys: ['a'],
      meta_keys: ['m'],
      period: 'P1DT2H',
      states: ['completed'],
      on_conflict: 'replace_except_schedule',
    };
    expect(parseUniquePolicy(policy)).to.deep.equal(policy);
  });

  it('A.3 accepts whole seconds as a period and normalises them to ISO 8601', function () {
    expect(parseUniquePolicy({ period: 600 }).period).to.equal('PT600S');
    expect(issues({ period: 0 })).to.deep.equal(['unique.period: whole seconds must be a positive integer, got 0']);
    expect(issues({ period: 1.5 })[0]).to.match(/^unique\.period: whole seconds/);
  });

  const invalid: [string, unknown, string[]][] = [
    ['not an object', 'reject', ['unique: expected a policy object, got "reject"']],
    ['an array', [], ['unique: expected a policy object, got an array']],
    ['§2.2 typo in keys', { keys: ['type', 'argz'] }, ['unique.keys[1]: "argz" is not one of type, queue, args, meta']],
    [
      '§2.2 keys are case-sensitive',
      { keys: ['Queue'] },
      ['unique.keys[0]: "Queue" is not one of type, queue, args, meta (values are case-sensitive: did you mean "queue"?)'],
    ],
    ['keys not an array', { keys: 'type' }, ['unique.keys: expected an array of dimensions, got "type"']],
    ['§13 uniqueItems on keys', { keys: ['type', 'type'] }, ['unique.keys[1]: "type" appears more than once']],
    ['§13 uniqueItems on args_keys', { keys: ['args'], args_keys: ['a', 'b', 'a'] }, ['unique.args_keys[2]: "a" appears more than once']],
    ['§13 args_keys items are strings', { keys: ['args'], args_keys: [1] }, ['unique.args_keys[0]: expected a string, got number']],
    [
      '§2.2 meta without meta_keys',
      { keys: ['meta'] },
      ['unique.meta_keys: required and non-empty when keys includes "meta" (§2.2): hashing all of meta would make every job unique'],
    ],
    [
      '§2.2 meta with null meta_keys',
      { keys: ['meta'], meta_keys: null },
      ['unique.meta_keys: required and non-empty when keys includes "meta" (§2.2): hashing all of meta would make every job unique'],
    ],
    [
      '§2.2 meta with empty meta_keys',
      { keys: ['meta'], meta_keys: [] },
      ['unique.meta_keys: required and non-empty when keys includes "meta" (§2.2): hashing all of meta would make every job unique'],
    ],
    ['§13 minItems on meta_keys', { meta_keys: [] }, ['unique.meta_keys: must not be empty (omit it instead)']],
    [
      'meta_keys without "meta" in keys would be ignored',
      { meta_keys: ['t'] },
      ['unique.meta_keys: is set but keys does not include "meta", so it would be ignored'],
    ],
    [
      'args_keys without "args" in keys would be ignored',
      { args_keys: ['id'] },
      ['unique.args_keys: is set but keys does not include "args", so it would be ignored'],
    ],
    [
      '§6.2 invalid state',
      { states: ['available', 'running'] },
      ['unique.states[1]: "running" is not one of scheduled, available, pending, active, completed, retryable, cancelled, discarded'],
    ],
    [
      '§6.2 state case',
      { states: ['Active'] },
      [
        'unique.states[0]: "Active" is not one of scheduled, available, pending, active, completed, retryable, cancelled, discarded (values are case-sensitive: did you mean "active"?)',
      ],
    ],
    [
      '§6.2 an empty states list',
      { states: [] },
      [
        'unique.states: must not be empty: no state would ever count as a duplicate, silently disabling deduplication (omit it for the default)',
      ],
    ],
    [
      '§5 unknown strategy',
      { on_conflict: 'skip' },
      ['unique.on_conflict: "skip" is not one of reject, replace, replace_except_schedule, ignore'],
    ],
    [
      '§13 additionalProperties',
      { keys: ['type'], unique_for: 60, fields: [] },
      [
        'unique.unique_for: unknown field (allowed: keys, args_keys, meta_keys, period, states, on_conflict, x_period_anchor, x_key, x_update, x_max_wait, x_successor)',
        'unique.fields: unknown field (allowed: keys, args_keys, meta_keys, period, states, on_conflict, x_period_anchor, x_key, x_update, x_max_wait, x_successor)',
      ],
    ],
    [
      '§7.2 period not ISO 8601',
      { period: '1 hour' },
      ['unique.period: "1 hour" is not an ISO 8601 duration of the form PnYnMnWnDTnHnMnS (e.g. "PT1H", "P1D", "PT0.5S")'],
    ],
    [
      '§7.2 period with no component',
      { period: 'P' },
      ['unique.period: "P" has no duration component (ISO 8601 needs at least one, e.g. "PT1H")'],
    ],
    ['§7.2 period with a bare T', { period: 'P1DT' }, ['unique.period: "P1DT" has a time designator T with no time component after it']],
    [
      '§7.2 zero period',
      { period: 'PT0S' },
      [
        'unique.period: "PT0S" is zero: a zero period would expire every job at once and silently disable deduplication (omit period for no expiry)',
      ],
    ],
    [
      '§7.2 lowercase designators',
      { period: 'pt1h' },
      ['unique.period: "pt1h" is not an ISO 8601 duration of the form PnYnMnWnDTnHnMnS (e.g. "PT1H", "P1D", "PT0.5S")'],
    ],
    [
      '§7.2 period of the wrong type',
      { period: true },
      ['unique.period: expected an ISO 8601 duration string or whole seconds, got boolean'],
    ],
  ];
  for (const [title, input, expected] of invalid) {
    it(`rejects ${title}`, function () {
      expect(issues(input)).to.deep.equal(expected);
    });
  }

  it('reports every problem at once, each with its path', function () {
    expect(issues({ keys: ['argz'], states: ['done'], on_conflict: 'x' })).to.have.length(3);
  });

  it('§2.2 with the job: args_keys must exist in args, meta_keys in meta', function () {
    expect(issues({ keys: ['args'], args_keys: ['user_id'] }, { args: { userId: 1 } })).to.deep.equal([
      'unique.args_keys[0]: "user_id" is not a key of args (§2.2: a missing key would make every job without it collide)',
    ]);
    expect(issues({ keys: ['args'], args_keys: ['id'] }, { args: [{ x: 1 }] })[0]).to.contain('is not a key of args[0]');
    expect(issues({ keys: ['meta'], meta_keys: ['tenant'] }, { args: {}, meta: {} })).to.deep.equal([
      'unique.meta_keys[0]: "tenant" is not a key of meta (a missing key would make every job without it collide)',
    ]);
    expect(parseUniquePolicy({ keys: ['args'], args_keys: ['user_id'] }, { args: { user_id: 1 } }).args_keys).to.deep.equal(['user_id']);
  });

  it('the error serialises to the OJS invalid_request body', function () {
    try {
      parseUniquePolicy({ keys: ['argz'] });
    } catch (error) {
      expect(JSON.parse(JSON.stringify(error))).to.deep.equal({
        error: {
          code: 'invalid_request',
          message: 'unique.keys[0]: "argz" is not one of type, queue, args, meta',
          retryable: false,
          details: { issues: [{ path: 'unique.keys[0]', message: '"argz" is not one of type, queue, args, meta' }] },
        },
      });
      return;
    }
    expect.fail('expected a throw');
  });

  it('named state groups are valid states arrays', function () {
    for (const [name, states] of Object.entries(UNIQUE_STATE_GROUPS)) {
      expect(parseUniquePolicy({ states: [...states] }).states, name).to.deep.equal([...states]);
    }
  });
});

describe('compactUniquePolicy (a policy stored beside each job)', function () {
  it('drops exactly the §2.1 defaults: the default policy is {}', function () {
    expect(compactUniquePolicy(parseUniquePolicy({}))).to.deep.equal({});
    expect(
      compactUniquePolicy(parseUniquePolicy({ keys: ['type'], states: [...DEFAULT_UNIQUE_STATES], on_conflict: 'reject', period: null })),
    ).to.deep.equal({});
    expect(compactUniquePolicy(parseUniquePolicy({ keys: ['type', 'args'], period: 3600 }))).to.deep.equal({
      keys: ['type', 'args'],
      period: 'PT3600S',
    });
    // The default states in another order are another list: kept as given.
    expect(
      compactUniquePolicy(parseUniquePolicy({ states: ['pending', 'available', 'active', 'scheduled', 'retryable'] })),
    ).to.have.property('states');
  });

  it('parses back to the same policy, for 2,000 random policies', function () {
    const random = seededRandom(7);
    const subset = <T>(items: readonly T[]) => items.filter(() => random(2) === 0);
    const states = ['available', 'active', 'scheduled', 'retryable', 'pending', 'completed', 'discarded', 'cancelled'] as const;
    for (let i = 0; i < 2000; i++) {
      const keys = subset(['type', 'queue', 'args', 'meta'] as const);
      const input: Record<string, unknown> = {};
      if (random(2)) input.keys = keys;
      if (keys.includes('args') && random(2)) input.args_keys = random(3) ? ['a', 'b'].slice(0, 1 + random(2)) : null;
      if (keys.includes('meta')) input.meta_keys = ['tenant'];
      if (random(2)) input.period = random(2) ? ['PT1H', 'P1M', 'P1Y2M3DT4H', 'PT0.5S'][random(4)] : random(2) ? 60 : null;
      if (random(2)) {
        const picked = subset(states);
        if (picked.length > 0) input.states = random(2) ? picked : [...DEFAULT_UNIQUE_STATES];
      }
      if (random(2)) input.on_conflict = ['reject', 'replace', 'replace_except_schedule', 'ignore'][random(4)];
      let policy;
      try {
        policy = parseUniquePolicy(input);
      } catch {
        continue; // a combination §2.2 refuses: nothing to store
      }
      const stored = JSON.parse(JSON.stringify(compactUniquePolicy(policy)));
      expect(parseUniquePolicy(stored), JSON.stringify(input)).to.deep.equal(policy);
    }
  });
});
