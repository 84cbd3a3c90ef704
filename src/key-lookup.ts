/**
 * A uniqueness key named for a lookup (which job holds it, releasing it), the same on every
 * backend: by a job as it would be enqueued (its policy computes the key and says which jobs
 * count) or by the key itself, `{ uniqueness_key }` as job views report it (then a job holds the
 * key while it is not finished: the live states).
 */
import { InvalidJobInputError } from './errors.js';
import type { UniquePolicy } from './unique-policy.js';

/** A uniqueness key as job views report it (`job.uniqueness_key`). */
export interface UniquenessKeyRef {
  uniqueness_key: string;
}

/** What a lookup reads: the key, and the policy that says which of its jobs count (null: the live ones). */
export interface KeyLookup {
  key: string;
  policy: UniquePolicy | null;
}

/** Whether `target` names a key directly (`{ uniqueness_key }`), rather than a job to enqueue. */
export function isKeyRef(target: unknown): target is UniquenessKeyRef {
  return typeof target === 'object' && target !== null && Object.prototype.hasOwnProperty.call(target, 'uniqueness_key');
}

/** A `{ uniqueness_key }` checked (a non-empty string), as a lookup. */
export function keyRefLookup(ref: UniquenessKeyRef): KeyLookup {
  if (typeof ref.uniqueness_key !== 'string' || ref.uniqueness_key.length === 0 || ref.uniqueness_key.includes('\u0000')) {
    throw new InvalidJobInputError([{ path: 'uniqueness_key', message: 'must be a non-empty string (a job view’s uniqueness_key)' }]);
  }
  return { key: ref.uniqueness_key, policy: null };
}
