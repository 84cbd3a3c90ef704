/**
 * The pre-image of a uniqueness key (spec §4.1 steps 1–2) written in one pass: RFC 8785 (JCS)
 * canonical JSON of a value whose strings and object keys are all in Unicode NFC (§4.2), checked
 * against the rules of src/json-rules.ts on the way.
 *
 * The pass only answers "this value is not JSON": it returns `undefined` and the caller asks
 * `validateJson` what and where, which walks the value in the caller's key order and so names the
 * same first problem as it always did. Validation and output stay one walk for the common case,
 * a valid value, and the error path pays for a second.
 *
 * Why each step is byte-identical to normalising a copy and serialising it per RFC 8785:
 *  - Strings: a string whose code units are all below U+0300 is well-formed and in NFC (every
 *    such character has NFC_QC=Yes and combining class 0, so nothing composes or reorders; a
 *    test checks every pair), so only one with a code unit at or above U+0300 is checked and
 *    normalised. A string with nothing to escape (no control character, `"` or `\`) is written
 *    between quotes as it is, any other by JSON.stringify, whose escaping (ES2019 well-formed
 *    JSON.stringify) is RFC 8785's: `\b \t \n \f \r \" \\`, other controls as lowercase
 *    `\u00xx`, nothing else.
 *  - Numbers: RFC 8785 serialises with ECMAScript's Number::toString, which is what String()
 *    does for a finite number (`-0` gives `0`).
 *  - Object members: sorted by the UTF-16 code units of their NFC keys (JavaScript's `<` on
 *    strings), after refusing two keys that are equal after NFC.
 *
 * Recursion is bounded: a container nested deeper than MAX_JSON_DEPTH is refused before it is
 * entered, which also stops a cycle.
 *
 * Objects of one shape (the same keys in the same order, as in an array of records or the args
 * of one job type) are sorted once: the sorted, quoted keys are kept as a plan (see LAST_PLAN).
 */
import { MAX_JSON_DEPTH } from './json-rules.js';

/**
 * @returns the canonical JSON text of `value`, or `undefined` when `value` is not JSON by the
 *   rules `validateJson(value, path, { distinctNfcKeys: true })` applies.
 */
export function canonicalJson(value: unknown): string | undefined {
  return write(value, 0);
}

/** How to write an object with given own keys: `heads[i]` (`{"k":` or `,"k":`) then the value of `order[i]`. */
interface Plan {
  /** The keys the plan was made for, in the object's own order: a later object with the same keys reuses the plan. */
  source: readonly string[];
  order: readonly string[];
  heads: readonly string[];
  /** Few and short keys: worth keeping for the next object. */
  cacheable: boolean;
}

/** Below U+0300 and nothing to escape: written between quotes as it is (see the file comment). */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\u02ff]*$/;
/** A character RFC 8785 escapes. */
const ESCAPE = /[\x00-\x1f"\\]/;

const MAX_EXACT = 2 ** 53;

/**
 * Plans are kept across calls, since the jobs of one type hash args of one shape: the last plan
 * used at each depth (an array of records reuses it from one record to the next) and, for jobs of
 * several types interleaved, the last plan made for each first key. A plan is used only for an
 * object whose keys are the same strings, so any plan is safe to reuse or replace (a call that
 * re-enters through a getter included). Only plans of objects with few, short keys are kept, at
 * most MAX_PLANS_PER_FIRST_KEY for each of MAX_FIRST_KEYS first keys: the cache holds key names,
 * never values.
 */
const LAST_PLAN: (Plan | undefined)[] = [];
const PLANS_BY_FIRST_KEY = new Map<string, Plan[]>();
const MAX_FIRST_KEYS = 256;
const MAX_PLANS_PER_FIRST_KEY = 8;
const MAX_PLAN_KEYS = 32;
const MAX_PLAN_KEY_LENGTH = 64;

function write(value: unknown, depth: number): string | undefined {
  switch (typeof value) {
    case 'string':
      return quote(value);
    case 'number':
      // Refuses NaN, ±Infinity and every double of magnitude 2^53 or more (all integers, some
      // already rounded): json-rules.ts says why.
      return value > -MAX_EXACT && value < MAX_EXACT ? String(value) : undefined;
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object':
      if (value === null) return 'null';
      if (depth >= MAX_JSON_DEPTH) return undefined;
      return Array.isArray(value) ? writeArray(value, depth) : writeObject(value, depth);
    default:
      return undefined;
  }
}

/**
 * A string as RFC 8785 writes it after NFC, or undefined for a lone surrogate. A short string is
 * scanned once in JavaScript, cheaper than a call into the regular expression engine; a long one
 * first tries the regular expression, which scans faster.
 */
function quote(value: string): string | undefined {
  if (value.length > 32 && PLAIN.test(value)) return `"${value}"`;
  let escape = false;
  let high = false;
  let surrogate = false;
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    if (unit < 0x300) {
      if (unit < 0x20 || unit === 0x22 || unit === 0x5c) escape = true;
    } else {
      high = true;
      if (unit >= 0xd800 && unit <= 0xdfff) surrogate = true;
    }
  }
  if (!high) return escape ? JSON.stringify(value) : `"${value}"`;
  if (surrogate && !value.isWellFormed()) return undefined;
  const nfc = value.normalize('NFC');
  // No character's NFC brings in one to escape today; a string NFC changed is checked anyway.
  if (nfc !== value) escape = ESCAPE.test(nfc);
  return escape ? JSON.stringify(nfc) : `"${nfc}"`;
}

/** {@link PLAIN}, without a call into the regular expression engine for a short string. */
function isPlain(value: string): boolean {
  if (value.length > 32) return PLAIN.test(value);
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    if (unit < 0x20 || unit === 0x22 || unit === 0x5c || unit >= 0x300) return false;
  }
  return true;
}

function writeArray(array: readonly unknown[], depth: number): string | undefined {
  if (array.length === 0) return '[]';
  let out = '[';
  for (let i = 0; i < array.length; i++) {
    if (!Object.hasOwn(array, i)) return undefined;
    const item = write(array[i], depth + 1);
    if (item === undefined) return undefined;
    out += i === 0 ? item : `,${item}`;
  }
  return `${out}]`;
}

function writeObject(object: object, depth: number): string | undefined {
  const proto = Object.getPrototypeOf(object);
  if (proto !== Object.prototype && proto !== null) return undefined;
  if (Object.getOwnPropertySymbols(object).length > 0) return undefined;
  const keys = Object.keys(object);
  if (keys.length === 0) return '{}';
  const plan = planFor(keys, depth);
  if (plan === undefined) return undefined;
  const { order, heads } = plan;
  let out = '';
  for (let i = 0; i < order.length; i++) {
    const member = write((object as Record<string, unknown>)[order[i]!], depth + 1);
    if (member === undefined) return undefined;
    out += heads[i]! + member;
  }
  return `${out}}`;
}

function planFor(keys: readonly string[], depth: number): Plan | undefined {
  const last = LAST_PLAN[depth];
  if (last !== undefined && sameKeys(last.source, keys)) return last;
  const first = keys[0]!;
  let plans = PLANS_BY_FIRST_KEY.get(first);
  let plan = plans?.find((candidate) => sameKeys(candidate.source, keys));
  if (plan === undefined) {
    plan = makePlan(keys);
    if (plan === undefined || !plan.cacheable) return plan;
    if (plans === undefined) {
      if (PLANS_BY_FIRST_KEY.size >= MAX_FIRST_KEYS) PLANS_BY_FIRST_KEY.clear();
      plans = [];
      PLANS_BY_FIRST_KEY.set(first, plans);
    }
    if (plans.length >= MAX_PLANS_PER_FIRST_KEY) plans.shift();
    plans.push(plan);
  }
  LAST_PLAN[depth] = plan;
  return plan;
}

function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The sorted members of an object with own keys `keys`, or undefined for a key that is not well-formed or two keys equal after NFC. */
function makePlan(keys: readonly string[]): Plan | undefined {
  const n = keys.length;
  // Sort keys: the NFC form of each key (itself for nearly every key), sorted with the raw key.
  const sortKeys = keys.slice();
  const order = keys.slice();
  let renamed = false;
  let cacheable = n <= MAX_PLAN_KEYS;
  for (let i = 0; i < n; i++) {
    const key = keys[i]!;
    if (key.length > MAX_PLAN_KEY_LENGTH) cacheable = false;
    if (isPlain(key)) continue;
    if (!key.isWellFormed()) return undefined;
    const nfc = key.normalize('NFC');
    if (nfc !== key) {
      sortKeys[i] = nfc;
      renamed = true;
    }
  }
  if (n > 16) {
    const index = Array.from(sortKeys.keys()).sort((a, b) => (sortKeys[a]! < sortKeys[b]! ? -1 : sortKeys[a]! > sortKeys[b]! ? 1 : 0));
    const unsorted = sortKeys.slice();
    for (let i = 0; i < n; i++) {
      sortKeys[i] = unsorted[index[i]!]!;
      order[i] = keys[index[i]!]!;
    }
  } else {
    // An insertion sort for the few keys of a record.
    for (let i = 1; i < n; i++) {
      const sortKey = sortKeys[i]!;
      const key = order[i]!;
      let j = i - 1;
      for (; j >= 0 && sortKeys[j]! > sortKey; j--) {
        sortKeys[j + 1] = sortKeys[j]!;
        order[j + 1] = order[j]!;
      }
      sortKeys[j + 1] = sortKey;
      order[j + 1] = key;
    }
  }
  const heads = new Array<string>(n);
  for (let i = 0; i < n; i++) {
    // Own keys are distinct strings: only a key NFC changed can equal its neighbour.
    if (renamed && i > 0 && sortKeys[i] === sortKeys[i - 1]) return undefined;
    heads[i] = `${i === 0 ? '{' : ','}${quote(sortKeys[i]!)!}:`;
  }
  return { source: keys, order, heads, cacheable };
}
