/**
 * Jobs every entry point must refuse with `invalid_request` naming one field (the portable input
 * rules of docs/decisions.md), and jobs at the limits that every entry point must accept. Shared
 * so that each backend's tests can walk the same table.
 */
import { type JobInput } from '../src/index.js';
import { MAX_ATTEMPTS_RANGE, MAX_IDENTIFIER_LENGTH, MAX_JSON_DEPTH, PRIORITY_RANGE, TIME_RANGE_MS } from '../src/internal.js';

export const base = { type: 'email.send', queue: 'mail', args: { user_id: 42 }, unique: {} } satisfies JobInput;

/** An array nested `levels` deep, `[[[…1…]]]`. */
export function nestedArray(levels: number): unknown {
  let value: unknown = 1;
  for (let i = 0; i < levels; i++) value = [value];
  return value;
}

/** An object nested `levels` deep, `{a:{a:…1…}}`. */
export function nestedObject(levels: number): Record<string, unknown> {
  let value: unknown = 1;
  for (let i = 0; i < levels; i++) value = { a: value };
  return value as Record<string, unknown>;
}

const long = 'x'.repeat(MAX_IDENTIFIER_LENGTH + 1);
const cyclic: Record<string, unknown> = { a: 1 };
cyclic.self = cyclic;

/** [title, job, the path of the one issue expected (a prefix match when it ends with "…")]. */
export const invalidJobs: [string, JobInput, string][] = [
  ['§2.2 an empty type', { ...base, type: '' }, 'type'],
  ['§2.2 a type that is not a string', { ...base, type: 42 as never }, 'type'],
  ['§2.2 a type over the identifier limit', { ...base, type: long }, 'type'],
  ['§2.2 a type with U+0000', { ...base, type: 'a\u0000b' }, 'type'],
  ['§2.2 an empty queue', { ...base, queue: '' }, 'queue'],
  ['§2.2 a queue over the identifier limit', { ...base, queue: long }, 'queue'],
  ['§2.2 a queue with U+0000', { ...base, queue: 'q\u0000' }, 'queue'],
  ['§2.2 a queue with ":"', { ...base, queue: 'a:b' }, 'queue'],
  ['§2.2 a queue with a lone surrogate', { ...base, queue: 'q\uD800' }, 'queue'],
  ['§2.2 an empty id', { ...base, id: '' }, 'id'],
  ['§2.2 an id over the identifier limit', { ...base, id: long }, 'id'],
  ['§2.2 an id with U+0000', { ...base, id: 'job\u0000' }, 'id'],
  ['§2.2 an integer id ("123")', { ...base, id: '123' }, 'id'],
  ['§2.2 a negative integer id ("-5")', { ...base, id: '-5' }, 'id'],
  ['§2.2 the id "0"', { ...base, id: '0' }, 'id'],
  ['§2.2 an all-digit id ("0123")', { ...base, id: '0123' }, 'id'],
  ['§2.2 an id with ":"', { ...base, id: 'a:b:c' }, 'id'],
  ['§2.2 a numeric id', { ...base, id: 7 as never }, 'id'],
  ['§2.2 meta with U+0000 in a key', { ...base, meta: { 'a\u0000': 1 } }, 'meta["a\\u0000"]'],
  ['§2.2 meta with U+0000 in a nested string', { ...base, meta: { a: { b: ['x\u0000'] } } }, 'meta.a.b[0]'],
  ['§2.2 meta that is not an object', { ...base, meta: [] as never }, 'meta'],
  [
    '§2.2 args_keys naming a key with U+0000',
    { ...base, args: { 'a\u0000': 1 }, unique: { keys: ['args'], args_keys: ['a\u0000'] } },
    'unique.args_keys[0]',
  ],
  [
    '§2.2 meta_keys naming a key with U+0000',
    { ...base, meta: { a: 1 }, unique: { keys: ['meta'], meta_keys: ['a\u0000'] } },
    'unique.meta_keys[0]',
  ],
  ['priority NaN', { ...base, priority: Number.NaN }, 'priority'],
  ['priority 1.5', { ...base, priority: 1.5 }, 'priority'],
  ['priority above the portable range', { ...base, priority: PRIORITY_RANGE.max + 1 }, 'priority'],
  ['priority below the portable range', { ...base, priority: PRIORITY_RANGE.min - 1 }, 'priority'],
  ['priority as a string', { ...base, priority: '1' as never }, 'priority'],
  ['max_attempts 0', { ...base, max_attempts: 0 }, 'max_attempts'],
  ['max_attempts above the portable range', { ...base, max_attempts: MAX_ATTEMPTS_RANGE.max + 1 }, 'max_attempts'],
  ['max_attempts Infinity', { ...base, max_attempts: Number.POSITIVE_INFINITY }, 'max_attempts'],
  ['scheduled_at after year 9999', { ...base, scheduled_at: new Date(TIME_RANGE_MS.max + 1) }, 'scheduled_at'],
  ['scheduled_at before year 1', { ...base, scheduled_at: '0000-12-31T23:59:59Z' }, 'scheduled_at'],
  ['scheduled_at an invalid Date', { ...base, scheduled_at: new Date(Number.NaN) }, 'scheduled_at'],
  ['§4 unhashed args: NaN', { ...base, args: { user_id: 42, n: Number.NaN } }, 'args.n'],
  ['§4 unhashed args: -Infinity', { ...base, args: { n: Number.NEGATIVE_INFINITY } }, 'args.n'],
  ['§4 unhashed args: 2^53', { ...base, args: { n: 2 ** 53 } }, 'args.n'],
  ['§4 unhashed args: a lone surrogate', { ...base, args: { s: '\uDC00' } }, 'args.s'],
  ['§4 unhashed args: a hole', { ...base, args: [1, , 3] }, 'args[1]'], // eslint-disable-line no-sparse-arrays
  ['§4 unhashed args: a cycle', { ...base, args: cyclic }, 'args.self'],
  ['§4 unhashed args: a Date', { ...base, args: { at: new Date(0) } }, 'args.at'],
  ['§4 unhashed args: a Map', { ...base, args: { m: new Map() } }, 'args.m'],
  [
    '§4 args not selected by args_keys: NaN',
    { ...base, args: { user_id: 42, n: Number.NaN }, unique: { keys: ['args'], args_keys: ['user_id'] } },
    'args.n',
  ],
  ['§4 unhashed meta: NaN', { ...base, meta: { n: Number.NaN } }, 'meta.n'],
  ['§4 args nested 2,000 levels, unhashed', { ...base, args: nestedArray(2000) }, 'args[0]…'],
  ['§4 args nested 2,000 levels, hashed', { ...base, args: nestedArray(2000), unique: { keys: ['args'] } }, 'args[0]…'],
  ['§4 meta nested 2,000 levels', { ...base, meta: nestedObject(2000) }, 'meta.a…'],
  ['§4 args one level too deep', { ...base, args: nestedArray(MAX_JSON_DEPTH + 1) }, 'args[0]…'],
  ['§7 period 9007199254740991 seconds', { ...base, unique: { period: 9007199254740991 } }, 'unique.period'],
  ['§7 period "PT8639999999999S"', { ...base, unique: { period: 'PT8639999999999S' } }, 'unique.period'],
  ['§7 period "P273789Y"', { ...base, unique: { period: 'P273789Y' } }, 'unique.period'],
  ['§7 period that ends after year 9999 from now ("P8000Y")', { ...base, unique: { period: 'P8000Y' } }, 'unique.period'],
];

/** Jobs at the limits, which every entry point accepts. */
export const validJobs: [string, JobInput][] = [
  [
    'identifiers of exactly the limit',
    { ...base, type: 't'.repeat(MAX_IDENTIFIER_LENGTH), queue: 'q'.repeat(MAX_IDENTIFIER_LENGTH), id: 'i'.repeat(MAX_IDENTIFIER_LENGTH) },
  ],
  [
    'an identifier of the limit in astral characters (code points, not UTF-16 units)',
    { ...base, type: '\u{1F600}'.repeat(MAX_IDENTIFIER_LENGTH) },
  ],
  ['ids BullMQ and Graphile Worker both accept', { ...base, id: 'job-12' }],
  ['an id that only looks numeric ("1e3")', { ...base, id: '1e3' }],
  ['U+0000 in args (stored as JSON text everywhere)', { ...base, args: { s: 'a\u0000b', ['k\u0000']: 1 }, unique: { keys: ['args'] } }],
  ['priority and max_attempts at the limits', { ...base, priority: PRIORITY_RANGE.max, max_attempts: MAX_ATTEMPTS_RANGE.max }],
  ['the lowest priority', { ...base, priority: PRIORITY_RANGE.min, max_attempts: MAX_ATTEMPTS_RANGE.min }],
  ['scheduled_at at the end of year 9999', { ...base, scheduled_at: '9999-12-31T23:59:59.999Z' }],
  ['scheduled_at at the start of year 1', { ...base, scheduled_at: new Date(TIME_RANGE_MS.min) }],
  ['args and meta nested exactly to the limit', { ...base, args: nestedArray(MAX_JSON_DEPTH), meta: nestedObject(MAX_JSON_DEPTH) }],
  ['a long period that still ends by year 9999', { ...base, unique: { period: 'P7000Y' } }],
];

/** Whether `path` is what a case expects (`…` marks a prefix). */
export function pathMatches(path: string, expected: string): boolean {
  return expected.endsWith('…') ? path.startsWith(expected.slice(0, -1)) : path === expected;
}
