/**
 * Turns a caller's value into the JSON value that is hashed (spec §4.1 steps 1–2): every string,
 * object key and value alike, at every depth, in Unicode NFC (§4.2), and anything JSON cannot
 * carry refused with the path to it.
 *
 * Refused rather than coerced, because each silent coercion JSON.stringify would do makes two
 * different jobs share a key (or one job get two): `undefined` properties and functions vanish,
 * `NaN`/`Infinity` become `null`, Dates become strings, Maps and Sets become `{}`, BigInt throws,
 * array holes become `null`, and integers past 2^53 are already rounded. `-0` is the exception:
 * RFC 8785 serialises it as `0` and every host stores it as `0`, so it hashes as `0`.
 *
 * Messages name the path (which may include key names of args) but never a value: error messages
 * end up in error-level logs, and spec §12 keeps job data out of those.
 */
import type { JsonValue } from './job.js';
import type { ValidationIssue } from './errors.js';
import { isPlainObject } from './selectable-args.js';

export type NormalizeResult = { ok: true; value: JsonValue } | { ok: false; issue: ValidationIssue };

/** @param path the dotted path of `value` in the job, used in the issue (e.g. `args`). */
export function normalizeJson(value: unknown, path: string): NormalizeResult {
  try {
    return { ok: true, value: walk(value, { parent: null, segment: path }, new Set()) };
  } catch (error) {
    if (error instanceof NotJson) return { ok: false, issue: { path: render(error.at), message: error.message } };
    throw error;
  }
}

/**
 * Where a value sits, as a linked list built while walking. The path string is only rendered
 * when something is refused: building it for every value cost more than the rest of the walk.
 */
interface At {
  parent: At | null;
  segment: string | number;
}

function render(at: At): string {
  let out = '';
  for (let node: At | null = at; node; node = node.parent) {
    const { segment } = node;
    out =
      (node.parent === null
        ? String(segment)
        : typeof segment === 'number'
          ? `[${segment}]`
          : /^[A-Za-z_$][\w$]*$/.test(segment)
            ? `.${segment}`
            : `[${JSON.stringify(segment)}]`) + out;
  }
  return out;
}

class NotJson extends Error {
  constructor(
    readonly at: At,
    message: string,
  ) {
    super(message);
  }
}

function walk(value: unknown, at: At, seen: Set<object>): JsonValue {
  switch (typeof value) {
    case 'string':
      if (!value.isWellFormed()) throw new NotJson(at, 'string contains a lone UTF-16 surrogate, which is not valid Unicode');
      return value.normalize('NFC');
    case 'boolean':
      return value;
    case 'number':
      if (!Number.isFinite(value)) throw new NotJson(at, 'NaN and Infinity are not JSON numbers');
      if (Number.isInteger(value) && !Number.isSafeInteger(value)) {
        throw new NotJson(
          at,
          'a number of magnitude 2^53 or more may already be a rounded integer (distinct values would collide); pass it as a string',
        );
      }
      return Object.is(value, -0) ? 0 : value;
    case 'bigint':
      throw new NotJson(at, 'BigInt is not a JSON value; pass it as a string');
    case 'undefined':
      throw new NotJson(at, 'undefined is not a JSON value (JSON.stringify would silently drop it); omit the key or use null');
    case 'function':
    case 'symbol':
      throw new NotJson(at, `a ${typeof value} is not a JSON value`);
  }
  if (value === null) return null;
  const object = value as object;
  if (seen.has(object)) throw new NotJson(at, 'circular reference');
  seen.add(object);
  try {
    if (Array.isArray(object)) {
      const out: JsonValue[] = new Array(object.length);
      for (let i = 0; i < object.length; i++) {
        if (!(i in object)) throw new NotJson({ parent: at, segment: i }, 'array hole is not a JSON value');
        out[i] = walk(object[i], { parent: at, segment: i }, seen);
      }
      return out;
    }
    if (!isPlainObject(object)) {
      const kind = object instanceof Date ? 'a Date (pass date.toISOString())' : `a ${object.constructor?.name ?? 'non-plain'} object`;
      throw new NotJson(at, `${kind} is not a JSON value`);
    }
    if (Object.getOwnPropertySymbols(object).length > 0) throw new NotJson(at, 'symbol-keyed properties are not JSON');
    // A null-prototype object: a `__proto__` key stays an ordinary own property.
    const out = Object.create(null) as { [key: string]: JsonValue };
    for (const key of Object.keys(object)) {
      const childAt: At = { parent: at, segment: key };
      if (!key.isWellFormed()) throw new NotJson(childAt, 'key contains a lone UTF-16 surrogate');
      const normalizedKey = key.normalize('NFC');
      if (normalizedKey in out) {
        throw new NotJson(childAt, 'two keys of this object are the same string after Unicode NFC normalisation');
      }
      out[normalizedKey] = walk((object as Record<string, unknown>)[key], childAt, seen);
    }
    return out;
  } finally {
    seen.delete(object);
  }
}
