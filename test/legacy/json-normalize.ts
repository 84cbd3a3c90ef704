/**
 * TEST ONLY: the key computation as it was before src/canonical-json.ts (normalise a copy of
 * each hashed value, then serialise it with the `canonicalize` package), kept unchanged so that
 * test/canonical-json.test.ts compares the one-pass writer with the real previous
 * implementation. Not imported by src/.
 */
/**
 * Turns a caller's value into the JSON value that is hashed (spec §4.1 steps 1–2): every string,
 * object key and value alike, at every depth, in Unicode NFC (§4.2), and anything JSON cannot
 * carry refused with the path to it. `validateJson` applies the same rules without copying, to
 * the parts of a job that are stored but not hashed.
 *
 * Refused rather than coerced, because each silent coercion JSON.stringify would do makes two
 * different jobs share a key (or one job get two): `undefined` properties and functions vanish,
 * `NaN`/`Infinity` become `null`, Dates become strings, Maps and Sets become `{}`, BigInt throws,
 * array holes become `null`, and integers past 2^53 are already rounded. `-0` is the exception:
 * RFC 8785 serialises it as `0` and every host stores it as `0`, so it hashes as `0`.
 *
 * The walk is a loop over an explicit stack, never a recursion, and stops at
 * {@link MAX_JSON_DEPTH} levels: a deeply nested value is a typed error naming its path, not a
 * stack overflow. Only own properties are read (an array hole is refused, not looked up on the
 * prototype).
 *
 * Messages name the path (which may include key names of args) but never a value: error messages
 * end up in error-level logs, and spec §12 keeps job data out of those.
 */
import type { JsonValue } from '../../src/job.js';
import type { ValidationIssue } from '../../src/errors.js';
import { isPlainObject } from '../../src/json-rules.js';

/**
 * The deepest nesting of arrays and objects accepted in `args` and `meta` (a bare `{}` is one
 * level). Far below every host's own recursion limits (JSON.stringify, RFC 8785 serialisation,
 * Redis' cjson), and deeper than job payloads go in practice.
 */
export const MAX_JSON_DEPTH = 64;

export type NormalizeResult = { ok: true; value: JsonValue } | { ok: false; issue: ValidationIssue };

export interface ValidateJsonOptions {
  /** Refuse U+0000 in strings and keys (PostgreSQL's jsonb cannot store it). (Default: false.) */
  noNul?: boolean;
}

/** @param path the dotted path of `value` in the job, used in the issue (e.g. `args`). */
export function normalizeJson(value: unknown, path: string): NormalizeResult {
  try {
    return { ok: true, value: walk(value, path, true, false) as JsonValue };
  } catch (error) {
    if (error instanceof NotJson) return { ok: false, issue: error.issue };
    throw error;
  }
}

/**
 * The rules of {@link normalizeJson} without the copy (and without its check that two keys are
 * not equal after NFC, which only matters to a hashed copy): the first problem, or null.
 */
export function validateJson(value: unknown, path: string, options: ValidateJsonOptions = {}): ValidationIssue | null {
  try {
    walk(value, path, false, options.noNul === true);
    return null;
  } catch (error) {
    if (error instanceof NotJson) return error.issue;
    throw error;
  }
}

/** One container being walked: its current child is `index - 1`. */
interface Frame {
  source: object;
  /** Own enumerable keys of an object; null for an array. */
  keys: string[] | null;
  index: number;
  /** The copy being filled (copy mode only). */
  out: JsonValue[] | { [key: string]: JsonValue } | null;
}

class NotJson extends Error {
  constructor(readonly issue: ValidationIssue) {
    super(issue.message);
  }
}

function fail(root: string, stack: readonly Frame[], length: number, message: string): never {
  throw new NotJson({ path: render(root, stack, length), message });
}

/** The path of the current child of `stack[length - 1]` (the root itself when length is 0). */
function render(root: string, stack: readonly Frame[], length: number): string {
  let out = root;
  for (let i = 0; i < length; i++) {
    const frame = stack[i]!;
    const segment = frame.keys === null ? frame.index - 1 : frame.keys[frame.index - 1]!;
    out +=
      typeof segment === 'number' ? `[${segment}]` : /^[A-Za-z_$][\w$]*$/.test(segment) ? `.${segment}` : `[${JSON.stringify(segment)}]`;
  }
  return out;
}

/**
 * Checks a scalar (returns its JSON value, normalised in copy mode) or returns `CONTAINER` for an
 * object or array, which the caller walks.
 */
const CONTAINER = Symbol('container');

function scalar(value: unknown, copy: boolean, noNul: boolean, root: string, stack: Frame[], length: number): JsonValue | typeof CONTAINER {
  switch (typeof value) {
    case 'string':
      if (!value.isWellFormed()) fail(root, stack, length, 'string contains a lone UTF-16 surrogate, which is not valid Unicode');
      if (noNul && value.includes('\u0000')) fail(root, stack, length, 'string contains U+0000, which PostgreSQL cannot store in jsonb');
      return copy ? value.normalize('NFC') : value;
    case 'boolean':
      return value;
    case 'number':
      if (!Number.isFinite(value)) fail(root, stack, length, 'NaN and Infinity are not JSON numbers');
      if (Number.isInteger(value) && !Number.isSafeInteger(value)) {
        fail(
          root,
          stack,
          length,
          'a number of magnitude 2^53 or more may already be a rounded integer (distinct values would collide); pass it as a string',
        );
      }
      return Object.is(value, -0) ? 0 : value;
    case 'bigint':
      return fail(root, stack, length, 'BigInt is not a JSON value; pass it as a string');
    case 'undefined':
      return fail(root, stack, length, 'undefined is not a JSON value (JSON.stringify would silently drop it); omit the key or use null');
    case 'function':
    case 'symbol':
      return fail(root, stack, length, `a ${typeof value} is not a JSON value`);
  }
  return value === null ? null : CONTAINER;
}

/** A frame for `object` at depth `length + 1`, checked; its copy is attached by the caller. */
function open(object: object, copy: boolean, root: string, stack: Frame[], length: number): Frame {
  if (length >= MAX_JSON_DEPTH) {
    // Only a cycle or a deep value gets here: a cycle repeats a container along the path, and
    // is reported where it first does.
    const chain = [...stack.slice(0, length).map((frame) => frame.source), object];
    const first = chain.findIndex((item, index) => chain.indexOf(item) !== index);
    if (first >= 0) fail(root, stack, first, 'circular reference');
    fail(root, stack, length, `nested deeper than ${MAX_JSON_DEPTH} levels of arrays and objects`);
  }
  if (Array.isArray(object)) return { source: object, keys: null, index: 0, out: copy ? new Array<JsonValue>(object.length) : null };
  if (!isPlainObject(object)) {
    const kind = object instanceof Date ? 'a Date (pass date.toISOString())' : `a ${object.constructor?.name ?? 'non-plain'} object`;
    fail(root, stack, length, `${kind} is not a JSON value`);
  }
  if (Object.getOwnPropertySymbols(object).length > 0) fail(root, stack, length, 'symbol-keyed properties are not JSON');
  // A null-prototype copy: a `__proto__` key stays an ordinary own property.
  return { source: object, keys: Object.keys(object), index: 0, out: copy ? (Object.create(null) as { [key: string]: JsonValue }) : null };
}

function walk(value: unknown, root: string, copy: boolean, noNul: boolean): JsonValue | undefined {
  const stack: Frame[] = [];
  const top = scalar(value, copy, noNul, root, stack, 0);
  if (top !== CONTAINER) return top;
  const rootFrame = open(value as object, copy, root, stack, 0);
  stack.push(rootFrame);
  while (stack.length > 0) {
    const length = stack.length;
    const frame = stack[length - 1]!;
    const { source, keys } = frame;
    let child: unknown;
    let outKey: string | number;
    if (keys === null) {
      const array = source as unknown[];
      if (frame.index >= array.length) {
        stack.pop();
        continue;
      }
      const i = frame.index++;
      if (!Object.hasOwn(array, i)) fail(root, stack, length, 'array hole is not a JSON value');
      child = array[i];
      outKey = i;
    } else {
      if (frame.index >= keys.length) {
        stack.pop();
        continue;
      }
      const key = keys[frame.index++]!;
      if (!key.isWellFormed()) fail(root, stack, length, 'key contains a lone UTF-16 surrogate');
      if (noNul && key.includes('\u0000')) fail(root, stack, length, 'key contains U+0000, which PostgreSQL cannot store in jsonb');
      child = (source as Record<string, unknown>)[key];
      outKey = key;
      if (copy) {
        outKey = key.normalize('NFC');
        if (outKey in frame.out!) fail(root, stack, length, 'two keys of this object are the same string after Unicode NFC normalisation');
      }
    }
    const result = scalar(child, copy, noNul, root, stack, length);
    if (result === CONTAINER) {
      const next = open(child as object, copy, root, stack, length);
      if (copy) (frame.out as Record<string | number, JsonValue>)[outKey] = next.out!;
      stack.push(next);
    } else if (copy) {
      (frame.out as Record<string | number, JsonValue>)[outKey] = result;
    }
  }
  return copy ? (rootFrame.out as JsonValue) : undefined;
}
