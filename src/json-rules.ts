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
 * The walk recurses at most {@link MAX_JSON_DEPTH} levels and refuses a container below that
 * before entering it: a deeply nested value (or a cycle) is a typed error naming its path, not a
 * stack overflow. Only own properties are read (an array hole is refused, not looked up on the
 * prototype). Containers are walked in their own key order, so the problem reported is the first
 * in the caller's value.
 *
 * Messages name the path (which may include key names of args) but never a value: error messages
 * end up in error-level logs, and spec §12 keeps job data out of those.
 */
import type { ValidationIssue } from './errors.js';

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
  const problem = check(value, 0, options.noNul === true, options.distinctNfcKeys === true);
  return problem === undefined ? null : problem.issue(path);
}

/**
 * A refusal, found where the walk stood; each container it unwinds through adds the segment of
 * its child (the path is only built for a value that has a problem).
 */
class Problem {
  /** From the problem up to the root. */
  private readonly segments: (string | number)[] = [];
  /** The containers along the path, from the problem's parent up to the root (depth problems only). */
  private readonly containers: object[] = [];

  /** @param deep the container nested too deep, which may instead close a cycle. */
  constructor(
    private readonly message: string,
    private readonly deep?: object,
  ) {}

  in(container: object, segment: string | number): this {
    this.segments.push(segment);
    if (this.deep !== undefined) this.containers.push(container);
    return this;
  }

  issue(root: string): ValidationIssue {
    const segments = this.segments.reverse();
    if (this.deep === undefined) return { path: render(root, segments), message: this.message };
    // Only a cycle or a deep value gets here: a cycle repeats a container along the path, and
    // is reported where it first does.
    const chain = [...this.containers.reverse(), this.deep];
    const first = chain.findIndex((item, index) => chain.indexOf(item) !== index);
    if (first >= 0) return { path: render(root, segments.slice(0, first)), message: 'circular reference' };
    return { path: render(root, segments), message: this.message };
  }
}

function render(root: string, segments: readonly (string | number)[]): string {
  let out = root;
  for (const segment of segments) {
    out +=
      typeof segment === 'number' ? `[${segment}]` : /^[A-Za-z_$][\w$]*$/.test(segment) ? `.${segment}` : `[${JSON.stringify(segment)}]`;
  }
  return out;
}

/** The walk: recursive, at most MAX_JSON_DEPTH + 1 calls deep. */
function check(value: unknown, depth: number, noNul: boolean, distinctNfcKeys: boolean): Problem | undefined {
  switch (typeof value) {
    case 'string':
      if (!value.isWellFormed()) return new Problem('string contains a lone UTF-16 surrogate, which is not valid Unicode');
      if (noNul && value.includes('\u0000')) return new Problem('string contains U+0000, which PostgreSQL cannot store in jsonb');
      return undefined;
    case 'boolean':
      return undefined;
    case 'number':
      if (!Number.isFinite(value)) return new Problem('NaN and Infinity are not JSON numbers');
      if (Number.isInteger(value) && !Number.isSafeInteger(value)) {
        return new Problem(
          'a number of magnitude 2^53 or more may already be a rounded integer (distinct values would collide); pass it as a string',
        );
      }
      return undefined;
    case 'bigint':
      return new Problem('BigInt is not a JSON value; pass it as a string');
    case 'undefined':
      return new Problem('undefined is not a JSON value (JSON.stringify would silently drop it); omit the key or use null');
    case 'function':
    case 'symbol':
      return new Problem(`a ${typeof value} is not a JSON value`);
  }
  if (value === null) return undefined;
  const container = value as object;
  if (depth >= MAX_JSON_DEPTH) return new Problem(`nested deeper than ${MAX_JSON_DEPTH} levels of arrays and objects`, container);
  if (Array.isArray(container)) {
    for (let i = 0; i < container.length; i++) {
      if (!Object.hasOwn(container, i)) return new Problem('array hole is not a JSON value').in(container, i);
      const problem = check(container[i], depth + 1, noNul, distinctNfcKeys);
      if (problem !== undefined) return problem.in(container, i);
    }
    return undefined;
  }
  if (!isPlainObject(container)) {
    const kind = container instanceof Date ? 'a Date (pass date.toISOString())' : `a ${container.constructor?.name ?? 'non-plain'} object`;
    return new Problem(`${kind} is not a JSON value`);
  }
  if (Object.getOwnPropertySymbols(container).length > 0) return new Problem('symbol-keyed properties are not JSON');
  const nfcKeys = distinctNfcKeys ? new Set<string>() : null;
  for (const key of Object.keys(container)) {
    if (!key.isWellFormed()) return new Problem('key contains a lone UTF-16 surrogate').in(container, key);
    if (noNul && key.includes('\u0000'))
      return new Problem('key contains U+0000, which PostgreSQL cannot store in jsonb').in(container, key);
    const child = container[key];
    if (nfcKeys !== null) {
      const nfc = key.normalize('NFC');
      if (nfcKeys.has(nfc))
        return new Problem('two keys of this object are the same string after Unicode NFC normalisation').in(container, key);
      nfcKeys.add(nfc);
    }
    const problem = check(child, depth + 1, noNul, distinctNfcKeys);
    if (problem !== undefined) return problem.in(container, key);
  }
  return undefined;
}

/** A plain object (`{}` or `Object.create(null)`): what JSON calls an object; class instances are not. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
