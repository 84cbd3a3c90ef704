/**
 * Differential tests of the one-pass key writer (src/canonical-json.ts and the pre-image in
 * src/uniqueness-key.ts) against the implementation it replaced, kept in test/legacy/: normalise
 * a copy (NFC at every depth), then serialise it with the `canonicalize` package (RFC 8785).
 * Seeded (fast-check), so a failure replays: OJS_PROPERTY_SEED=<seed>.
 *
 * Compared: the canonical text, byte for byte; whether a value is refused; and the issue (path and
 * message) of every refusal, for hashed values, for `validateJson` as prepareUnique uses it on
 * stored values, and for whole jobs under policies.
 */
import { expect } from 'chai';
import canonicalize from 'canonicalize';
import fc from 'fast-check';
import { computeUniquenessKey, isInvalidJobInputError, parseUniquePolicy, type JobInput, type UniquePolicy } from '../src/index.js';
import { canonicalPreimage, MAX_JSON_DEPTH } from '../src/internal.js';
import { canonicalJson } from '../src/canonical-json.js';
import { validateJson } from '../src/json-rules.js';
import { normalizeJson as legacyNormalizeJson, validateJson as legacyValidateJson } from './legacy/json-normalize.js';
import { canonicalPreimage as legacyCanonicalPreimage } from './legacy/uniqueness-key.js';

const SEED = Number(process.env.OJS_PROPERTY_SEED ?? 20_261_123);
const RUNS = 4_000;

/** Pieces of strings: NFC/NFD pairs, singletons, reordering marks, astral characters, escapes, lone surrogates. */
const PIECES = [
  'a',
  'Z',
  '0',
  '9',
  ' ',
  '_',
  '-',
  '~',
  '\u007f',
  '\u0080',
  '\u00e9',
  'e\u0301',
  '\u00c5',
  'A\u030a',
  '\u212b',
  '\u2126',
  '\u037e',
  '\u1e9b\u0323',
  '\u0323\u0307',
  '\u0307\u0323',
  'q\u0301',
  '\u1100\u1161',
  '\uac00',
  '\u2014',
  '\u20ac',
  '\u00ff',
  '\u02ff',
  '\u0300',
  '\u0301',
  '\u0345',
  '\u00a0',
  '\ud83d\ude00',
  '\ud800\udc00',
  '\uffff',
  '\ufb01',
  '\ud800',
  '\udc00',
  '"',
  '\\',
  '/',
  '\n',
  '\t',
  '\b',
  '\f',
  '\r',
  '\u0000',
  '\u001f',
  '\u2028',
  '\u2029',
  '\u0b47\u0b3e',
  '\u0b4b',
  '\u3099',
  '\u304b\u3099',
  '\u304c',
];
const pieceArb = fc.constantFrom(...PIECES);
const stringArb = fc.oneof(
  { weight: 6, arbitrary: fc.string({ unit: pieceArb, maxLength: 8 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 6 }) },
  { weight: 1, arbitrary: fc.string({ unit: pieceArb, minLength: 30, maxLength: 60 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 33, maxLength: 80 }) },
);
const keyArb = fc.oneof(
  { weight: 4, arbitrary: stringArb },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      'a',
      'b',
      'id',
      'user_id',
      'name',
      '0',
      '1',
      '10',
      '9',
      '-1',
      '01',
      '4294967295',
      '__proto__',
      'toJSON',
      '',
      'e\u0301',
      '\u00e9',
      '\u00c5',
      'A\u030a',
      '\u212b',
    ),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 65, maxLength: 70 }) },
);
const numberArb = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(
    -0,
    0,
    1,
    -1,
    0.1,
    123.456,
    1e-7,
    1e-6,
    1e20,
    1e21,
    1e21 + 1,
    5e-324,
    -5e-324,
    2 ** 53,
    2 ** 53 - 1,
    -(2 ** 53),
    -(2 ** 53) + 1,
    2 ** 52 + 0.5,
    9007199254740993,
    1.7976931348623157e308,
    -2.5e-300,
    4.35,
    0.000001,
    1e300,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    Number.NEGATIVE_INFINITY,
  ),
);

class Point {
  x = 1;
}

/** Scalars JSON cannot carry, rare. */
const notJsonArb = fc.constantFrom<unknown>(undefined, () => 1, Symbol('s'), 1n, new Date(0), new Map(), new Point(), new Set([1]));

type Tree = unknown;

/** Builds objects with defineProperty, so that `__proto__` is an own key; some with a null prototype, a symbol or a hidden property. */
function objectOf(entries: [string, unknown][], flavour: number): Record<string, unknown> {
  const object = (flavour === 1 ? Object.create(null) : {}) as Record<string, unknown>;
  for (const [key, value] of entries) Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
  if (flavour === 2) Object.defineProperty(object, 'hidden', { value: undefined, enumerable: false }); // not enumerable: ignored
  if (flavour === 3) Object.defineProperty(object, Symbol('s'), { value: 1, enumerable: false }); // any symbol: refused
  return object;
}

const { tree: treeArb } = fc.letrec<{ tree: Tree; node: Tree }>((tie) => ({
  tree: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { weight: 3, arbitrary: tie('node') },
    { weight: 1, arbitrary: fc.constant(null) },
  ),
  node: fc.oneof(
    { depthSize: 'small' },
    { weight: 4, arbitrary: stringArb },
    { weight: 3, arbitrary: numberArb },
    { weight: 1, arbitrary: fc.boolean() },
    { weight: 1, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: notJsonArb },
    {
      weight: 3,
      arbitrary: fc.tuple(fc.array(tie('tree'), { maxLength: 5 }), fc.nat(9)).map(([items, flavour]) => {
        if (flavour === 0 && items.length > 1) {
          const holed = [...items];
          delete holed[1];
          return holed;
        }
        return items;
      }),
    },
    {
      weight: 4,
      arbitrary: fc
        .tuple(fc.array(fc.tuple(keyArb, tie('tree')), { maxLength: 6 }), fc.nat(19))
        .map(([entries, flavour]) => objectOf(entries, flavour)),
    },
    // Records of one shape, as the plan cache sees them.
    {
      weight: 1,
      arbitrary: fc
        .tuple(
          fc.uniqueArray(keyArb, { minLength: 1, maxLength: 5 }),
          fc.array(fc.array(tie('tree'), { minLength: 5, maxLength: 5 }), { minLength: 2, maxLength: 4 }),
        )
        .map(([keys, rows]) =>
          rows.map((row) =>
            objectOf(
              keys.map((key, i) => [key, row[i]]),
              0,
            ),
          ),
        ),
    },
  ),
}));

/** A value nested `depth` containers deep, alternating arrays and objects. */
function nested(depth: number, leaf: unknown): unknown {
  let value = leaf;
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value] : { k: value };
  return value;
}

const valueArb = fc.oneof(
  { weight: 12, arbitrary: treeArb },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.integer({ min: MAX_JSON_DEPTH - 2, max: MAX_JSON_DEPTH + 2 }), treeArb)
      .map(([depth, leaf]) => nested(depth, leaf)),
  },
  // More than 16 keys (sorted by Array.prototype.sort) and more than 32 (a plan that is not kept).
  {
    weight: 1,
    arbitrary: fc
      .uniqueArray(fc.tuple(keyArb, numberArb), { minLength: 17, maxLength: 40, selector: ([key]) => key })
      .map((entries) => objectOf(entries, 0)),
  },
);

type Outcome = { text: string } | { issue: unknown };

function legacyValue(value: unknown): Outcome {
  const normalized = legacyNormalizeJson(value, 'args');
  return normalized.ok ? { text: canonicalize(normalized.value)! } : { issue: normalized.issue };
}

function currentValue(value: unknown): Outcome {
  const text = canonicalJson(value);
  if (text !== undefined) {
    // The writer and the validator agree on what is JSON.
    expect(validateJson(value, 'args', { distinctNfcKeys: true })).to.equal(null);
    return { text };
  }
  return { issue: validateJson(value, 'args', { distinctNfcKeys: true }) };
}

function jobOutcome(compute: (job: JobInput, policy: UniquePolicy) => string, job: JobInput, policy: UniquePolicy): Outcome {
  try {
    return { text: compute(job, policy) };
  } catch (error) {
    if (!isInvalidJobInputError(error)) throw error;
    return { issue: error.issues };
  }
}

const POLICIES = [
  {},
  { keys: ['queue'] },
  { keys: ['type', 'queue', 'args'] },
  { keys: ['args'], args_keys: ['a'] },
  { keys: ['args'], args_keys: ['a', 'id', '__proto__', 'e\u0301', '\u00e9'] },
  { keys: ['args', 'meta'], meta_keys: ['tenant', 'b'] },
  { keys: ['meta', 'queue'], meta_keys: ['a'] },
].map((policy) => parseUniquePolicy(policy));

const jobArb = fc.record(
  {
    type: fc.oneof(stringArb, fc.constantFrom<unknown>('email.send', '', 42, undefined)),
    queue: fc.oneof(stringArb, fc.constantFrom<unknown>(undefined, 'default', '', 7)),
    args: fc.oneof(
      valueArb,
      fc.tuple(fc.subarray(['a', 'id', '__proto__', 'e\u0301', '\u00e9', 'x']), treeArb).map(([keys, value]) =>
        objectOf(
          keys.map((key) => [key, value]),
          0,
        ),
      ),
      fc.tuple(fc.subarray(['a', 'id', 'x']), treeArb).map(([keys, value]) => [
        objectOf(
          keys.map((key) => [key, value]),
          0,
        ),
        'second',
      ]),
    ),
    meta: fc.oneof(
      fc.constant(undefined),
      valueArb,
      fc.tuple(fc.subarray(['tenant', 'a', 'b']), treeArb).map(([keys, value]) =>
        objectOf(
          keys.map((key) => [key, value]),
          0,
        ),
      ),
    ),
  },
  { requiredKeys: [] },
) as fc.Arbitrary<JobInput>;

describe(`canonical JSON in one pass: the same keys and refusals as normalise-then-canonicalize (fast-check, seed ${SEED})`, function () {
  this.timeout(60_000);

  it('a value: the same RFC 8785 text, or the same refusal with the same issue', function () {
    fc.assert(
      fc.property(valueArb, (value) => {
        expect(currentValue(value)).to.deep.equal(legacyValue(value));
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });

  it('a stored value (validateJson, with and without the U+0000 rule): the same first issue', function () {
    fc.assert(
      fc.property(valueArb, fc.boolean(), (value, noNul) => {
        expect(validateJson(value, 'meta', { noNul })).to.deep.equal(legacyValidateJson(value, 'meta', { noNul }));
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });

  it('a job under a policy: the same pre-image and key, or the same issues', function () {
    fc.assert(
      fc.property(jobArb, fc.constantFrom(...POLICIES), (job, policy) => {
        const outcome = jobOutcome(canonicalPreimage, job, policy);
        expect(outcome).to.deep.equal(jobOutcome(legacyCanonicalPreimage, job, policy));
        if ('text' in outcome) expect(computeUniquenessKey(job, policy).canonical).to.equal(outcome.text);
      }),
      { seed: SEED, numRuns: RUNS },
    );
  });

  it('cycles and shared references: a cycle is refused where it first repeats, a shared value is not a cycle', function () {
    const shared = { x: [1, 'e\u0301'] };
    const selfObject: Record<string, unknown> = { a: 1 };
    selfObject.self = selfObject;
    const selfArray: unknown[] = [1];
    selfArray.push({ back: selfArray });
    // A cycle that closes below the depth limit: reported at its first repeat, not at the limit.
    const deepCycle: Record<string, unknown> = {};
    let tail = deepCycle;
    let tenth = deepCycle;
    for (let i = 0; i < 30; i++) {
      tail = (tail.k = i % 2 === 0 ? {} : Object.create(null)) as Record<string, unknown>;
      if (i === 10) tenth = tail;
    }
    tail.k = [tenth];
    for (const value of [{ a: shared, b: shared, c: [shared, shared] }, selfObject, selfArray, deepCycle, { z: selfObject, a: 1 }]) {
      expect(currentValue(value)).to.deep.equal(legacyValue(value));
    }
  });

  it('an array hole is refused even when Array.prototype has that index', function () {
    const holed = [0, , 2]; // eslint-disable-line no-sparse-arrays
    Object.defineProperty(Array.prototype, '1', { value: 'inherited', configurable: true, writable: true });
    try {
      expect(currentValue(holed))
        .to.deep.equal(legacyValue(holed))
        .and.to.have.nested.property('issue.message', 'array hole is not a JSON value');
    } finally {
      delete (Array.prototype as unknown as Record<string, unknown>)[1];
    }
  });

  it('keys sort by UTF-16 code units after NFC (U+10000 before U+FFFF; é composed before sorting)', function () {
    const value = { '\uffff': 1, '\ud800\udc00': 2, z: 3, 'e\u0301': 4, f: 5, '10': 6, '9': 7 };
    expect(canonicalJson(value)).to.equal('{"10":6,"9":7,"f":5,"z":3,"\u00e9":4,"\ud800\udc00":2,"\uffff":1}');
    expect(legacyValue(value)).to.deep.equal({ text: canonicalJson(value) });
  });

  it('every string of one or two code units below U+0300 is already NFC (the writer copies those as they are)', function () {
    for (let a = 0; a < 0x300; a++) {
      const one = String.fromCharCode(a);
      expect(one.normalize('NFC'), `U+${a.toString(16)}`).to.equal(one);
      for (let b = 0; b < 0x300; b++) {
        const two = one + String.fromCharCode(b);
        if (two.normalize('NFC') !== two) expect.fail(`U+${a.toString(16)} U+${b.toString(16)} is not NFC`);
      }
    }
  });

  it('a getter that computes another key while a key is written leaves both keys as they would be alone', function () {
    const policy = parseUniquePolicy({ keys: ['args'] });
    const other: JobInput = { type: 't', args: { b: 1, a: { y: 2, x: 1 } } };
    const otherKey = computeUniquenessKey(other, policy).canonical;
    let inner = '';
    const args = {
      m: 1,
      get k() {
        inner = computeUniquenessKey(other, policy).canonical;
        return { y: 'e\u0301', x: [1] };
      },
    };
    expect(computeUniquenessKey({ type: 't', args }, policy).canonical).to.equal('{"args":{"k":{"x":[1],"y":"\u00e9"},"m":1},"type":"t"}');
    expect(inner).to.equal(otherKey);
  });
});
