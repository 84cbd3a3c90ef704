/**
 * parseUniquePolicy keeps recently parsed policies (src/unique-policy.ts, `parsedPolicies`): a
 * policy parsed again answers exactly as its first parse did, and what a caller gets is its own.
 */
import { expect } from 'chai';
import { InvalidJobInputError, parseUniquePolicy, type UniquePolicy } from '../src/index.js';

describe('unique policy memo', function () {
  const policies: unknown[] = [
    {},
    { keys: ['type', 'args'] },
    { keys: ['type', 'args'], on_conflict: 'ignore' },
    { keys: ['type', 'args'], args_keys: ['a', 'b'] },
    { keys: ['type', 'args'], args_keys: ['ab'] },
    { keys: ['type', 'meta'], meta_keys: ['tenant'] },
    { period: 'PT1H' },
    { period: 3600 },
    { states: ['available', 'scheduled'] },
    { states: ['available', 'scheduled'], on_conflict: 'replace' },
    { keys: ['queue'], x_key: 'k' },
    { keys: undefined, on_conflict: 'ignore' },
  ];

  it('§2.1 a policy parsed again (a fresh object each time) is what the first parse gave, in value and field order', function () {
    for (const input of policies) {
      const first = parseUniquePolicy(structuredClone(input));
      for (let i = 0; i < 3; i++) {
        const again = parseUniquePolicy(structuredClone(input));
        expect(again, JSON.stringify(input)).to.deep.equal(first);
        expect(Object.keys(again)).to.deep.equal(Object.keys(first));
      }
    }
  });

  it('§2.2 similar policies are never taken for one another', function () {
    for (const input of policies) parseUniquePolicy(input);
    expect(parseUniquePolicy({ keys: ['type', 'args'], args_keys: ['a', 'b'] }).args_keys).to.deep.equal(['a', 'b']);
    expect(parseUniquePolicy({ keys: ['type', 'args'], args_keys: ['ab'] }).args_keys).to.deep.equal(['ab']);
    expect(parseUniquePolicy({ period: 'PT1H' }).period).to.equal('PT1H');
    expect(parseUniquePolicy({ period: 3600 }).period).to.equal('PT3600S');
  });

  it('§2.2 an invalid policy is refused every time, also after a valid one of the same shape', function () {
    parseUniquePolicy({ keys: ['type'] });
    for (let i = 0; i < 3; i++) {
      expect(() => parseUniquePolicy({ keys: ['typo'] })).to.throw(InvalidJobInputError);
      expect(() => parseUniquePolicy({ keys: ['type'], on_conflict: 'Reject' })).to.throw(InvalidJobInputError);
    }
  });

  it('a caller that changes the policy it got does not change the next parse', function () {
    const input = { keys: ['type', 'args'], states: ['available'] };
    const first: UniquePolicy = parseUniquePolicy(input);
    first.keys.push('meta');
    first.states.length = 0;
    (first as { on_conflict: string }).on_conflict = 'replace';
    const again = parseUniquePolicy(input);
    expect(again).to.include({ on_conflict: 'reject' });
    expect(again.keys).to.deep.equal(['type', 'args']);
    expect(again.states).to.deep.equal(['available']);
  });

  it('§2.2 the job-dependent rules still run on a remembered policy', function () {
    const input = { keys: ['type', 'args'], args_keys: ['user'] };
    parseUniquePolicy(input, { args: { user: 1 } });
    expect(() => parseUniquePolicy(input, { args: { other: 1 } })).to.throw(InvalidJobInputError, /args_keys/);
  });

  it('a policy whose property answers differently on each read is never remembered under another read', function () {
    // Read once for the memo's signature ('PT1H'), once more for the parse ('PT2H'): remembering
    // that parse under the first read would answer the next plain 'PT1H' policy with 'PT2H'.
    let reads = 0;
    const flipping = Object.defineProperty({ keys: ['type', 'queue'] }, 'period', {
      enumerable: true,
      get: () => (reads++ % 2 === 0 ? 'PT1H' : 'PT2H'),
    });
    expect(['PT1H', 'PT2H']).to.include(parseUniquePolicy(flipping).period);
    expect(parseUniquePolicy({ keys: ['type', 'queue'], period: 'PT1H' }).period).to.equal('PT1H');
    expect(parseUniquePolicy({ keys: ['type', 'queue'], period: 'PT2H' }).period).to.equal('PT2H');
  });

  it('a policy whose key list changes between reads is never remembered under another list', function () {
    // Lists ['keys'] for the signature, ['keys', 'on_conflict'] for the snapshot parsed, ['keys']
    // again after: remembering that parse under the first list would make every later
    // { keys: ['queue', 'type'] } an `ignore`.
    let listings = 0;
    const shifting = new Proxy(
      { keys: ['queue', 'type'], on_conflict: 'ignore' },
      { ownKeys: (target) => (listings++ === 1 ? Reflect.ownKeys(target) : ['keys']) },
    );
    expect(['reject', 'ignore']).to.include(parseUniquePolicy(shifting).on_conflict);
    expect(parseUniquePolicy({ keys: ['queue', 'type'] }).on_conflict).to.equal('reject');
  });
});
