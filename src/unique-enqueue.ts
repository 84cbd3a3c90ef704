/**
 * The pure first step of every enqueue, shared by all backends: check the job's own fields,
 * validate its policy (§2.2) and compute its key (§4), before any I/O, so that bad input is
 * refused with nothing written.
 */
import { InvalidUniquePolicyError, type ValidationIssue } from './errors.js';
import type { JobInput } from './job.js';
import { isPlainObject } from './selectable-args.js';
import { parseUniquePolicy, type UniquePolicy } from './unique-policy.js';
import { computeUniquenessKey } from './uniqueness-key.js';

export interface PreparedUnique {
  policy: UniquePolicy;
  key: string;
  canonical: string;
}

/**
 * Validates `job` and, when it has a `unique` policy, parses it and computes the key.
 * Returns null for a job without `unique` (it is enqueued as a plain job).
 *
 * @throws InvalidUniquePolicyError (`invalid_request`) naming every bad field.
 */
export function prepareUnique(job: JobInput): PreparedUnique | null {
  const issues = jobInputIssues(job);
  if (issues.length > 0) throw new InvalidUniquePolicyError(issues);
  if (job.unique === undefined || job.unique === null) return null;
  // The policy alone first, then the job-dependent rules inside computeUniquenessKey: each rule
  // runs once.
  const policy = parseUniquePolicy(job.unique);
  const { key, canonical } = computeUniquenessKey(job, policy);
  return { policy, key, canonical };
}

/** Problems with the job's own fields (not its policy), each naming the field. */
export function jobInputIssues(job: JobInput): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  if (!isPlainObject(job)) return [{ path: 'job', message: 'must be an object' }];
  if (typeof job.type !== 'string' || job.type.length === 0) issues.push({ path: 'type', message: 'must be a non-empty string' });
  if (job.queue !== undefined && (typeof job.queue !== 'string' || job.queue.length === 0)) {
    issues.push({ path: 'queue', message: 'must be a non-empty string' });
  }
  if (job.id !== undefined && (typeof job.id !== 'string' || job.id.length === 0)) issues.push({ path: 'id', message: 'must be a non-empty string' });
  if (job.meta !== undefined && !isPlainObject(job.meta)) issues.push({ path: 'meta', message: 'must be a plain object' });
  if (job.max_attempts !== undefined && !(Number.isSafeInteger(job.max_attempts) && job.max_attempts >= 1)) {
    issues.push({ path: 'max_attempts', message: 'must be an integer of at least 1' });
  }
  if (job.priority !== undefined && !Number.isSafeInteger(job.priority)) issues.push({ path: 'priority', message: 'must be an integer' });
  if (job.scheduled_at !== undefined && scheduledAtMs(job.scheduled_at) === null) {
    issues.push({ path: 'scheduled_at', message: 'must be a Date or an ISO 8601 timestamp with a time zone (ojs-core §5.5)' });
  }
  return issues;
}

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$/i;

/** `scheduled_at` as epoch ms, or null when it is not a valid time with a time zone. */
export function scheduledAtMs(value: string | Date): number | null {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.getTime();
  if (typeof value !== 'string' || !TIMESTAMP.test(value)) return null;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? null : ms;
}
