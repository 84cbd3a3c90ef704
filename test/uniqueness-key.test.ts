import { expect } from 'chai';
import { computeUniquenessKey, isInvalidJobInputError, parseUniquePolicy, type JobInput } from '../src/index.js';
import { canonicalPreimage } from '../src/internal.js';

const example: JobInput = {
  type: 'email.send',
  queue: 'notifications',
  args: { user_id: 42, template: 'welcome', locale: 'en-US' },
  meta: { tenant_id: 'acme', trace_id: 'abc123' },
};

function preimage(job: JobInput, policy: unknown): string {
  return canonicalPreimage(job, parseUniquePolicy(policy));
}

function invalidPath(job: JobInput, policy: unknown): string[] {
  try {
    preimage(job, policy);
  } catch (error) {
    expect(isInvalidJobInputError(error), String(error)).to.equal(true);
    return (error as { issues: { path: string }[] }).issues.map((i) => i.path);
  }
  throw new Error('expected an invalid_request');
}

describe('§4 uniqueness key computation (pre-images)', function () {
  // One row per dimension and per worked example of the spec. The pre-image is what is hashed.
  const rows: [string, JobInput, unknown, string][] = [
    [
      '§4.3 worked example',
      example,
      { keys: ['type', 'queue', 'args'], args_keys: ['user_id'] },
      '{"args":{"user_id":42},"queue":"notifications","type":"email.send"}',
    ],
    ['§3.1 type only (the default)', example, {}, '{"type":"email.send"}'],
    ['§2.2 type is included even when keys omits it', example, { keys: ['queue'] }, '{"queue":"notifications","type":"email.send"}'],
    ['§2.2 keys: [] still hashes type', example, { keys: [] }, '{"type":"email.send"}'],
    ['§3.2 queue', example, { keys: ['type', 'queue'] }, '{"queue":"notifications","type":"email.send"}'],
    ['§3.2 queue defaults to "default"', { type: 'a.b', args: [] }, { keys: ['queue'] }, '{"queue":"default","type":"a.b"}'],
    [
      '§3.3 full args, keys sorted',
      example,
      { keys: ['args'] },
      '{"args":{"locale":"en-US","template":"welcome","user_id":42},"type":"email.send"}',
    ],
    [
      '§3.3 args_keys select a subset',
      example,
      { keys: ['args'], args_keys: ['user_id', 'locale'] },
      '{"args":{"locale":"en-US","user_id":42},"type":"email.send"}',
    ],
    [
      '§3.3 OJS array args, whole',
      { type: 'x.y', args: ['a@b.c', 'welcome'] },
      { keys: ['args'] },
      '{"args":["a@b.c","welcome"],"type":"x.y"}',
    ],
    [
      '§3.3 OJS array args, args_keys from args[0]',
      { type: 'x.y', args: [{ id: 1, n: 2 }, 'z'] },
      { keys: ['args'], args_keys: ['id'] },
      '{"args":{"id":1},"type":"x.y"}',
    ],
    ['§3.4 meta_keys', example, { keys: ['meta'], meta_keys: ['tenant_id'] }, '{"meta":{"tenant_id":"acme"},"type":"email.send"}'],
    [
      '§10.1 type-level',
      { type: 'report.daily', args: { date: '2026-02-12', format: 'pdf' } },
      { keys: ['type'], on_conflict: 'ignore' },
      '{"type":"report.daily"}',
    ],
    [
      '§10.2 args-based',
      { type: 'email.send_welcome', args: { user_id: 42, locale: 'en-US' } },
      { keys: ['type', 'args'], args_keys: ['user_id'] },
      '{"args":{"user_id":42},"type":"email.send_welcome"}',
    ],
    [
      '§10.3 time-windowed',
      { type: 'notification.push', args: { user_id: 42, event: 'new_comment' } },
      { keys: ['type', 'args'], args_keys: ['user_id', 'event'], period: 'PT1H' },
      '{"args":{"event":"new_comment","user_id":42},"type":"notification.push"}',
    ],
    [
      '§10.4 queue-scoped',
      { type: 'image.resize', queue: 'thumbnails', args: { image_id: 'img_abc123', size: '256x256' } },
      { keys: ['type', 'queue', 'args'], args_keys: ['image_id'] },
      '{"args":{"image_id":"img_abc123"},"queue":"thumbnails","type":"image.resize"}',
    ],
    [
      '§10.5 terminal-state aware',
      { type: 'invoice.generate', args: { order_id: 'order_12345' } },
      { keys: ['type', 'args'], args_keys: ['order_id'], states: ['completed'], period: 'P1D' },
      '{"args":{"order_id":"order_12345"},"type":"invoice.generate"}',
    ],
    [
      '§10.6 replace-except-schedule',
      { type: 'digest.send', args: { user_id: 42, items: ['item_1', 'item_2', 'item_3'] } },
      { keys: ['type', 'args'], args_keys: ['user_id'] },
      '{"args":{"user_id":42},"type":"digest.send"}',
    ],
    [
      '§10.7 args and meta',
      { type: 'cache.warm', args: { resource: 'products' }, meta: { tenant_id: 'acme', region: 'us-east-1' } },
      { keys: ['type', 'args', 'meta'], meta_keys: ['tenant_id'] },
      '{"args":{"resource":"products"},"meta":{"tenant_id":"acme"},"type":"cache.warm"}',
    ],
    [
      '§4.2 nested keys sorted at every level',
      { type: 't', args: { b: { z: 1, a: [{ d: 1, c: 2 }] }, a: null } },
      { keys: ['args'] },
      '{"args":{"a":null,"b":{"a":[{"c":2,"d":1}],"z":1}},"type":"t"}',
    ],
    [
      'RFC 8785 sorts keys by UTF-16 code units, not code points',
      { type: 't', args: { '\u{1F600}': 1, '\uFB01': 2, a: 3 } },
      { keys: ['args'] },
      '{"args":{"a":3,"\u{1F600}":1,"\uFB01":2},"type":"t"}',
    ],
    [
      'RFC 8785 numbers: shortest round-trip form',
      { type: 't', args: { a: 1.0, b: 123.456, c: 0.1, d: 1e-7, e: 100, f: -2.5e-300 } },
      { keys: ['args'] },
      '{"args":{"a":1,"b":123.456,"c":0.1,"d":1e-7,"e":100,"f":-2.5e-300},"type":"t"}',
    ],
    [
      '-0 hashes as 0 (RFC 8785; every host stores it as 0)',
      { type: 't', args: { n: -0 } },
      { keys: ['args'] },
      '{"args":{"n":0},"type":"t"}',
    ],
    [
      'largest exact integer is kept',
      { type: 't', args: { n: Number.MAX_SAFE_INTEGER } },
      { keys: ['args'] },
      '{"args":{"n":9007199254740991},"type":"t"}',
    ],
    [
      '§4.2 NFC on values and keys',
      { type: 't', args: { ['cafe\u0301']: 'Jose\u0301' } },
      { keys: ['args'] },
      '{"args":{"caf\u00e9":"Jos\u00e9"},"type":"t"}',
    ],
    [
      '§4.2 NFC on type and queue',
      { type: 'e\u0301.x', queue: 'q\u0301', args: [] },
      { keys: ['queue'] },
      '{"queue":"q\u0301".normalize("NFC") === "q\u0301" ? "q\u0301" : "","type":"\u00e9.x"}',
    ],
    [
      'strings are escaped per RFC 8785',
      { type: 't', args: { s: 'a"b\\c\n\u0001\u2028' } },
      { keys: ['args'] },
      '{"args":{"s":"a\\"b\\\\c\\n\\u0001\u2028"},"type":"t"}',
    ],
    [
      '__proto__ is data, not a prototype',
      { type: 't', args: JSON.parse('{"__proto__":{"x":1}}') },
      { keys: ['args'] },
      '{"args":{"__proto__":{"x":1}},"type":"t"}',
    ],
  ];
  for (const [title, job, policy, expected] of rows) {
    if (title.startsWith('§4.2 NFC on type')) {
      it(title, function () {
        // q + combining acute has no precomposed form: NFC leaves it; é.x is composed.
        expect(preimage(job, policy)).to.equal('{"queue":"q\u0301","type":"\u00e9.x"}');
      });
      continue;
    }
    it(title, function () {
      expect(preimage(job, policy)).to.equal(expected);
    });
  }

  it('§4.1 the key is SHA-256 of the pre-image in lowercase hex (§4.3 example)', function () {
    const { key, canonical } = computeUniquenessKey(
      example,
      parseUniquePolicy({ keys: ['type', 'queue', 'args'], args_keys: ['user_id'] }),
    );
    expect(canonical).to.equal('{"args":{"user_id":42},"queue":"notifications","type":"email.send"}');
    // Computed independently: printf '%s' '<pre-image>' | sha256sum
    expect(key).to.equal('71f9344b82e66297a49775bbe27752297922842b675330641ebe3ff4fea46c1f');
  });

  it('§4.2 is deterministic and insensitive to key order and Unicode form', function () {
    const policy = parseUniquePolicy({ keys: ['args', 'meta'], meta_keys: ['t'] });
    const a = computeUniquenessKey({ type: 't', args: { x: 'é', y: [1, { b: 2, a: 1 }] }, meta: { t: 'ä', z: 1 } }, policy);
    const b = computeUniquenessKey({ type: 't', args: { y: [1, { a: 1, b: 2 }], x: 'e\u0301' }, meta: { z: 2, t: 'a\u0308' } }, policy);
    expect(a).to.deep.equal(b);
  });

  it('distinct values that JSON.stringify would merge stay distinct', function () {
    const policy = parseUniquePolicy({ keys: ['args'] });
    const keys = [{ a: null }, { a: 0 }, { a: '0' }, { a: false }, { a: [] }, { a: {} }, { a: '' }].map(
      (args) => computeUniquenessKey({ type: 't', args }, policy).key,
    );
    expect(new Set(keys).size).to.equal(keys.length);
  });

  describe('values JSON cannot carry are refused with their path, never coerced', function () {
    const cases: [string, unknown, string][] = [
      ['undefined property', { a: 1, b: undefined }, 'args.b'],
      ['undefined in an array', [1, undefined], 'args[1]'],
      ['array hole', [1, , 3], 'args[1]'], // eslint-disable-line no-sparse-arrays
      ['NaN', { n: Number.NaN }, 'args.n'],
      ['Infinity', { n: Number.POSITIVE_INFINITY }, 'args.n'],
      ['-Infinity', { deep: { n: Number.NEGATIVE_INFINITY } }, 'args.deep.n'],
      ['BigInt', { n: 1n }, 'args.n'],
      ['integer beyond 2^53', { n: 2 ** 53 }, 'args.n'],
      // Every double of magnitude >= 2^53 is an integer that may be a rounded one: refused alike.
      ['1e21 (a double that may be a rounded integer)', { n: 1e21 }, 'args.n'],
      ['function', { f: () => 1 }, 'args.f'],
      ['symbol value', { s: Symbol('x') }, 'args.s'],
      ['Date', { at: new Date(0) }, 'args.at'],
      ['Map', { m: new Map() }, 'args.m'],
      ['class instance', { u: new URL('https://x.test') }, 'args.u'],
      ['lone surrogate', { s: '\uD800' }, 'args.s'],
      ['keys equal after NFC', { ['caf\u00e9']: 1, ['cafe\u0301']: 2 }, 'args["cafe\u0301"]'],
      ['key with a space is quoted in the path', { 'a b': undefined }, 'args["a b"]'],
    ];
    for (const [title, args, path] of cases) {
      it(title, function () {
        expect(invalidPath({ type: 't', args }, { keys: ['args'] })).to.deep.equal([path]);
      });
    }

    it('circular reference', function () {
      const args: Record<string, unknown> = {};
      args.self = args;
      expect(invalidPath({ type: 't', args }, { keys: ['args'] })).to.deep.equal(['args.self']);
    });

    it('a value outside the hashed dimensions is not inspected', function () {
      expect(preimage({ type: 't', args: { at: new Date(0), id: 1 } }, { keys: ['args'], args_keys: ['id'] })).to.equal(
        '{"args":{"id":1},"type":"t"}',
      );
    });

    it('an empty type', function () {
      expect(invalidPath({ type: '', args: [] }, {})).to.deep.equal(['type']);
    });
  });

  describe('§2.2 args_keys and meta_keys must exist', function () {
    it('names every missing args key', function () {
      expect(invalidPath(example, { keys: ['args'], args_keys: ['user_id', 'userId', 'tpl'] })).to.deep.equal([
        'unique.args_keys[1]',
        'unique.args_keys[2]',
      ]);
    });
    it('refuses args_keys on args that have no object to select from', function () {
      for (const args of [[1, 2], 'x', null, 42, []]) {
        expect(invalidPath({ type: 't', args }, { keys: ['args'], args_keys: ['id'] })).to.deep.equal(['unique.args_keys']);
      }
    });
    it('does not take an inherited property as present', function () {
      expect(invalidPath({ type: 't', args: { a: 1 } }, { keys: ['args'], args_keys: ['toString'] })).to.deep.equal([
        'unique.args_keys[0]',
      ]);
    });
    it('names a missing meta key', function () {
      expect(invalidPath(example, { keys: ['meta'], meta_keys: ['tenant_id', 'region'] })).to.deep.equal(['unique.meta_keys[1]']);
      expect(invalidPath({ type: 't', args: [] }, { keys: ['meta'], meta_keys: ['tenant_id'] })).to.deep.equal(['unique.meta_keys[0]']);
    });
  });
});
