/**
 * The uniqueness key of spec §4: collect the dimensions, write them as RFC 8785 canonical JSON
 * with every string in NFC (src/canonical-json.ts), SHA-256, lowercase hex.
 *
 * The canonical pre-image is returned alongside the key so that a person can see why two jobs
 * collide or not (`ojs-unique key job.json` prints it). Tests assert on the pre-image, which is
 * readable, and on the hash only once.
 */
import { hash } from 'node:crypto';
import { canonicalJson } from './canonical-json.js';
import { InvalidJobInputError, type ValidationIssue } from './errors.js';
import type { JobInput } from './job.js';
import { validateJson } from './json-rules.js';
import { jobIssues, type UniquePolicy } from './unique-policy.js';
import { selectableArgs } from './selectable-args.js';

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
  const canonical = writePreimage(job, policy);
  if (canonical !== undefined) return canonical;
  const issues = preimageIssues(job, policy);
  if (issues.length === 0) throw new Error('ojs-unique: the key writer refused a job its validation accepts (a bug, please report it)');
  throw new InvalidJobInputError(issues);
}

/**
 * The pre-image in one pass, or undefined when anything is wrong with the hashed dimensions
 * (then {@link preimageIssues} names every problem). Members in RFC 8785 order: args, meta,
 * queue, type.
 */
function writePreimage(job: JobInput, policy: UniquePolicy): string | undefined {
  if (policy.x_key !== undefined) return callerKeyPreimage(job, policy, policy.x_key);
  const type = ownField(job, 'type');
  if (typeof type !== 'string' || type.length === 0) return undefined;
  let out = canonicalJson(type);
  if (out === undefined) return undefined;
  out = `"type":${out}}`;
  if (policy.keys.includes('queue')) {
    const queue = ownField(job, 'queue') ?? DEFAULT_QUEUE;
    if (typeof queue !== 'string' || queue.length === 0) return undefined;
    const text = canonicalJson(queue);
    if (text === undefined) return undefined;
    out = `"queue":${text},${out}`;
  }
  if (policy.keys.includes('meta') && policy.meta_keys) {
    const selected = pick(ownField(job, 'meta') ?? {}, policy.meta_keys);
    const text = selected && canonicalJson(selected);
    if (text === undefined) return undefined;
    out = `"meta":${text},${out}`;
  }
  if (policy.keys.includes('args')) {
    const args = ownField(job, 'args');
    let text: string | undefined;
    if (policy.args_keys === null) {
      text = canonicalJson(args);
    } else {
      const selectable = selectableArgs(args);
      const selected = selectable.ok ? pick(selectable.object, policy.args_keys) : undefined;
      text = selected && canonicalJson(selected);
    }
    if (text === undefined) return undefined;
    out = `"args":${text},${out}`;
  }
  return `{${out}`;
}

/**
 * The pre-image of a caller-provided key (the `x_key` extension, Appendix A.1): `{"x_key": …}`,
 * with `"queue"` when `keys` names it, through the same canonical writer as every other key. It
 * has no `type` member, so it never equals a dimension-based pre-image, which always has one.
 */
function callerKeyPreimage(job: JobInput, policy: UniquePolicy, callerKey: string): string | undefined {
  const members = Object.create(null) as Record<string, unknown>;
  if (policy.keys.includes('queue')) {
    const queue = ownField(job, 'queue') ?? DEFAULT_QUEUE;
    if (typeof queue !== 'string' || queue.length === 0) return undefined;
    members.queue = queue;
  }
  members.x_key = callerKey;
  return canonicalJson(members);
}

/**
 * The own properties `keys` of `from`, in a null-prototype object (a `__proto__` key is data), or
 * undefined when one is missing (§2.2, reported by `jobIssues`).
 */
function pick(from: unknown, keys: readonly string[]): Record<string, unknown> | undefined {
  const selected = Object.create(null) as Record<string, unknown>;
  for (const key of keys) {
    if (typeof from !== 'object' || from === null || !Object.hasOwn(from, key)) return undefined;
    selected[key] = (from as Record<string, unknown>)[key];
  }
  return selected;
}

/** Every problem with the hashed dimensions of `job`, each naming its field, in field order. */
function preimageIssues(job: JobInput, policy: UniquePolicy): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  // Own properties only: an inherited `queue` or `meta` is not the job's.
  const type = ownField(job, 'type');
  const args = ownField(job, 'args');
  const meta = ownField(job, 'meta') ?? {};
  if (policy.x_key !== undefined) {
    const queue = ownField(job, 'queue') ?? DEFAULT_QUEUE;
    if (policy.keys.includes('queue') && (typeof queue !== 'string' || queue.length === 0)) {
      issues.push({ path: 'queue', message: 'must be a non-empty string' });
    }
    return issues;
  }

  if (typeof type !== 'string' || type.length === 0) {
    issues.push({ path: 'type', message: 'must be a non-empty string' });
  } else {
    check(type, 'type', issues);
  }
  if (policy.keys.includes('queue')) {
    const queue = ownField(job, 'queue') ?? DEFAULT_QUEUE;
    if (typeof queue !== 'string' || queue.length === 0) issues.push({ path: 'queue', message: 'must be a non-empty string' });
    else check(queue, 'queue', issues);
  }
  if (policy.keys.includes('args')) {
    if (policy.args_keys === null) {
      check(args, 'args', issues);
    } else {
      const selectable = selectableArgs(args);
      if (selectable.ok) check(pickPresent(selectable.object, policy.args_keys), selectable.path, issues);
    }
  }
  if (policy.keys.includes('meta') && policy.meta_keys) {
    check(typeof meta === 'object' && meta !== null ? pickPresent(meta, policy.meta_keys) : {}, 'meta', issues);
  }
  issues.push(...jobIssues(policy, { args, meta }));
  return issues;
}

/** The own properties `keys` of `from` that it has, in the order of `keys` (for the issue paths). */
function pickPresent(from: object, keys: readonly string[]): Record<string, unknown> {
  const selected = Object.create(null) as Record<string, unknown>;
  for (const key of keys) if (Object.hasOwn(from, key)) selected[key] = (from as Record<string, unknown>)[key];
  return selected;
}

function ownField<K extends keyof JobInput>(job: JobInput, field: K): JobInput[K] | undefined {
  return Object.hasOwn(job, field) ? job[field] : undefined;
}

function check(value: unknown, path: string, issues: ValidationIssue[]): void {
  const issue = validateJson(value, path, { distinctNfcKeys: true });
  if (issue) issues.push(issue);
}
