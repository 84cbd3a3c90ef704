/**
 * The rules a value must follow to be hashed (spec §4.1 steps 1–2) or stored as `args`/`meta`:
 * anything JSON cannot carry is refused with the path to it. src/canonical-json.ts applies the
 * same rules while writing a key's pre-image, and asks `validateJson` for the issue when it
 * refuses a value.
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
 * prototype). Containers are walked in their own key order, so the first problem reported is the
 * first in the caller's value.
 *
 * Messages name the path (which may include key names of args) but never a value: error messages
 * end up in error-level logs, and spec §12 keeps job data out of those.
 */
import type { ValidationIssue } from './errors.js';
import { isPlainObject } from './selectable-args.js';

/**
 * The deepest nesting of arrays and objects accepted in `args` and `meta` (a bare `{}` is one
 * level). Far below every host's own recursion limits (JSON.stringify, RFC 8785 serialisation,
 * Redis' cjson), and deeper than job payloads go in practice.
 */
export const MAX_JSON_DEPTH = 64;

export interface ValidateJsonOptions {
  /** Refuse U+0000 in strings and keys (PostgreSQL's jsonb cannot store it). (Default: false.) */
  noNul?: boolean;
  /**
   * Refuse two keys of one object that are the same string after Unicode NFC, which a hashed
   * value cannot have (its keys are normalised). (Default: false.)
   */
  distinctNfcKeys?: boolean;
}

/**
 * The first problem with `value`, or null.
 *
 * @param path the dotted path of `value` in the job, used in the issue (e.g. `args`).
 */
export function validateJson(value: unknown, path: string, options: ValidateJsonOptions = {}): ValidationIssue | null {
  try {
    walk(value, path, options.noNul === true, options.distinctNfcKeys === true);
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
  /** The NFC forms of the keys walked so far (distinctNfcKeys only). */
  nfcKeys: Set<string> | null;
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
      typeof segment === 'number'
        ? `[${segment}]`
        : /^[A-Za-z_$][\w$]*$/.test(segment)
          ? `.${segment}`
          : `[${JSON.stringify(segment)}]`;
  }
  return out;
}

/** Checks a scalar, or returns true for an object or array, which the caller walks. */
function isContainer(value: unknown, noNul: boolean, root: string, stack: Frame[], length: number): boolean {
  switch (typeof value) {
    case 'string':
      if (!value.isWellFormed()) fail(root, stack, length, 'string contains a lone UTF-16 surrogate, which is not valid Unicode');
      if (noNul && value.includes('\u0000')) fail(root, stack, length, 'string contains U+0000, which PostgreSQL cannot store in jsonb');
      return false;
    case 'boolean':
      return false;
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
      return false;
    case 'bigint':
      return fail(root, stack, length, 'BigInt is not a JSON value; pass it as a string');
    case 'undefined':
      return fail(root, stack, length, 'undefined is not a JSON value (JSON.stringify would silently drop it); omit the key or use null');
    case 'function':
    case 'symbol':
      return fail(root, stack, length, `a ${typeof value} is not a JSON value`);
  }
  return value !== null;
}

/** A frame for `object` at depth `length + 1`, checked. */
function open(object: object, distinctNfcKeys: boolean, root: string, stack: Frame[], length: number): Frame {
  if (length >= MAX_JSON_DEPTH) {
    // Only a cycle or a deep value gets here: a cycle repeats a container along the path, and
    // is reported where it first does.
    const chain = [...stack.slice(0, length).map((frame) => frame.source), object];
    const first = chain.findIndex((item, index) => chain.indexOf(item) !== index);
    if (first >= 0) fail(root, stack, first, 'circular reference');
    fail(root, stack, length, `nested deeper than ${MAX_JSON_DEPTH} levels of arrays and objects`);
  }
  if (Array.isArray(object)) return { source: object, keys: null, index: 0, nfcKeys: null };
  if (!isPlainObject(object)) {
    const kind = object instanceof Date ? 'a Date (pass date.toISOString())' : `a ${object.constructor?.name ?? 'non-plain'} object`;
    fail(root, stack, length, `${kind} is not a JSON value`);
  }
  if (Object.getOwnPropertySymbols(object).length > 0) fail(root, stack, length, 'symbol-keyed properties are not JSON');
  return { source: object, keys: Object.keys(object), index: 0, nfcKeys: distinctNfcKeys ? new Set() : null };
}

function walk(value: unknown, root: string, noNul: boolean, distinctNfcKeys: boolean): void {
  const stack: Frame[] = [];
  if (!isContainer(value, noNul, root, stack, 0)) return;
  stack.push(open(value as object, distinctNfcKeys, root, stack, 0));
  while (stack.length > 0) {
    const length = stack.length;
    const frame = stack[length - 1]!;
    const { source, keys } = frame;
    let child: unknown;
    if (keys === null) {
      const array = source as unknown[];
      if (frame.index >= array.length) {
        stack.pop();
        continue;
      }
      const i = frame.index++;
      if (!Object.hasOwn(array, i)) fail(root, stack, length, 'array hole is not a JSON value');
      child = array[i];
    } else {
      if (frame.index >= keys.length) {
        stack.pop();
        continue;
      }
      const key = keys[frame.index++]!;
      if (!key.isWellFormed()) fail(root, stack, length, 'key contains a lone UTF-16 surrogate');
      if (noNul && key.includes('\u0000')) fail(root, stack, length, 'key contains U+0000, which PostgreSQL cannot store in jsonb');
      child = (source as Record<string, unknown>)[key];
      if (frame.nfcKeys !== null) {
        const nfc = key.normalize('NFC');
        if (frame.nfcKeys.has(nfc)) fail(root, stack, length, 'two keys of this object are the same string after Unicode NFC normalisation');
        frame.nfcKeys.add(nfc);
      }
    }
    if (isContainer(child, noNul, root, stack, length)) stack.push(open(child as object, distinctNfcKeys, root, stack, length));
  }
}
