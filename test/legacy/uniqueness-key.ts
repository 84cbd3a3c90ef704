/**
 * TEST ONLY: the key computation as it was before src/canonical-json.ts (normalise a copy of
 * each hashed value, then serialise it with the `canonicalize` package), kept unchanged so that
 * test/canonical-json.test.ts compares the one-pass writer with the real previous
 * implementation. Not imported by src/.
 */
/**
 * The uniqueness key of spec §4: collect the dimensions, canonicalise (RFC 8785 via
 * `canonicalize`), SHA-256, lowercase hex.
 *
 * The canonical pre-image is returned alongside the key so that a person can see why two jobs
 * collide or not (`ojs-unique key job.json` prints it). Tests assert on the pre-image, which is
 * readable, and on the hash only once.
 */
import { hash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { InvalidJobInputError, type ValidationIssue } from '../../src/errors.js';
import type { JobInput, JsonValue } from '../../src/job.js';
import { normalizeJson } from './json-normalize.js';
import { jobIssues, type UniquePolicy } from '../../src/unique-policy.js';
import { selectableArgs } from '../../src/selectable-args.js';

export interface UniquenessKey {
  /** SHA-256 of `canonical`, lowercase hex (64 characters). */
  key: string;
  /** The exact RFC 8785 string that was hashed, e.g. `{"args":{"user_id":42},"queue":"notifications","type":"email.send"}`. */
  canonical: string;
}

/** The queue a job without one goes to (ojs-core §5.1). */
export const DEFAULT_QUEUE = 'default';

/**
 * Computes the uniqueness key of `job` under `policy` (spec §4.1). `type` is always included
 * (§2.2); `queue` defaults to `"default"`.
 *
 * @throws InvalidJobInputError when the job cannot be hashed: a missing or empty `type`,
 *   `args_keys` naming keys `args` does not have, `meta_keys` naming keys `meta` does not have,
 *   or a value JSON cannot carry (each issue names the field).
 */
export function computeUniquenessKey(job: JobInput, policy: UniquePolicy): UniquenessKey {
  const canonical = canonicalPreimage(job, policy);
  // crypto.hash (Node >= 20.12): the one-shot form skips the Hash object createHash() builds, a
  // large share of a key's cost; both encode the string as UTF-8.
  return { key: hash('sha256', canonical, 'hex'), canonical };
}

/** Step 1 and 2 of §4.1 only: the canonical JSON string that `computeUniquenessKey` hashes. */
export function canonicalPreimage(job: JobInput, policy: UniquePolicy): string {
  const issues: ValidationIssue[] = [];
  const dimensions: { [name: string]: JsonValue } = {};
  // Own properties only: an inherited `queue` or `meta` is not the job's.
  const type = ownField(job, 'type');
  const args = ownField(job, 'args');
  const meta = ownField(job, 'meta') ?? {};

  if (typeof type !== 'string' || type.length === 0) {
    issues.push({ path: 'type', message: 'must be a non-empty string' });
  } else {
    take(dimensions, 'type', type, 'type', issues);
  }
  if (policy.keys.includes('queue')) {
    const queue = ownField(job, 'queue') ?? DEFAULT_QUEUE;
    if (typeof queue !== 'string' || queue.length === 0) issues.push({ path: 'queue', message: 'must be a non-empty string' });
    else take(dimensions, 'queue', queue, 'queue', issues);
  }
  if (policy.keys.includes('args')) {
    if (policy.args_keys === null) {
      take(dimensions, 'args', args, 'args', issues);
    } else {
      const selectable = selectableArgs(args);
      if (selectable.ok) {
        const selected: Record<string, unknown> = {};
        for (const key of policy.args_keys) {
          if (Object.hasOwn(selectable.object, key)) {
            Object.defineProperty(selected, key, { value: selectable.object[key], enumerable: true, writable: true, configurable: true });
          }
        }
        take(dimensions, 'args', selected, selectable.path, issues);
      }
    }
  }
  if (policy.keys.includes('meta') && policy.meta_keys) {
    const selected: Record<string, unknown> = {};
    if (typeof meta === 'object' && meta !== null) {
      for (const key of policy.meta_keys) {
        if (Object.hasOwn(meta, key)) {
          Object.defineProperty(selected, key, {
            value: (meta as Record<string, unknown>)[key],
            enumerable: true,
            writable: true,
            configurable: true,
          });
        }
      }
    }
    take(dimensions, 'meta', selected, 'meta', issues);
  }
  issues.push(...jobIssues(policy, { args, meta }));
  if (issues.length > 0) throw new InvalidJobInputError(issues);

  const canonical = canonicalize(dimensions);
  if (canonical === undefined) throw new Error('canonicalize returned undefined for a normalised JSON object');
  return canonical;
}

function ownField<K extends keyof JobInput>(job: JobInput, field: K): JobInput[K] | undefined {
  return Object.hasOwn(job, field) ? job[field] : undefined;
}

function take(into: { [name: string]: JsonValue }, name: string, value: unknown, path: string, issues: ValidationIssue[]): void {
  const normalized = normalizeJson(value, path);
  if (normalized.ok) into[name] = normalized.value;
  else issues.push(normalized.issue);
}
