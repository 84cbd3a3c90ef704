/**
 * The pure first step of every enqueue, shared by all backends: check the job's own fields
 * against the portable input rules (src/input-limits.ts), validate its policy (§2.2) and compute
 * its key (§4), before any I/O, so that bad input is refused with nothing written, with the same
 * answer on every backend.
 *
 * Only the job's own properties are read (`ownJobInput`): a property inherited from a polluted
 * `Object.prototype` is not a field of the job.
 */
import { InvalidJobInputError, type ValidationIssue } from './errors.js';
import { MAX_ATTEMPTS_RANGE, MAX_IDENTIFIER_LENGTH, PRIORITY_RANGE, TIME_RANGE_MS } from './input-limits.js';
import type { JobInput } from './job.js';
import { validateJson } from './json-rules.js';
import { parsePeriod, periodEndProblem } from './period.js';
import { isPlainObject } from './json-rules.js';
import { parseUniquePolicyRemembered, policyExtensions, type UniqueExtension, type UniquePolicy } from './unique-policy.js';
import { computeUniquenessKey } from './uniqueness-key.js';
import { splitReportOnly } from './report-only-mark.js';

export interface PreparedUnique {
  policy: UniquePolicy;
  key: string;
  canonical: string;
  /**
   * An opaque object, one per distinct policy while the parse is remembered
   * (`parseUniquePolicyRemembered`): a key for caches of what the policy alone determines. Absent
   * when the policy was not remembered.
   */
  policyToken?: object;
  /** The policy was marked `x_report_only` (src/report-only.ts): decide and count, always insert. */
  reportOnly?: true;
}

export interface PrepareUniqueOptions {
  /**
   * The time the job will be created at, in epoch ms: `created_at + period` must be a time every
   * backend stores. (Default: `Date.now()`.)
   */
  now?: number;
  /**
   * The policy extensions the calling backend implements (its `capabilities.unique_jobs.extensions`).
   * A policy using another one is refused, naming the field: a backend that has not implemented
   * an extension must never enqueue as if the field were absent. (Default: none.)
   */
  extensions?: readonly UniqueExtension[];
}

/**
 * Validates `job` (all of it: identifiers, numbers, times, and `args` and `meta` as JSON in
 * full, hashed or not) and, when it has a `unique` policy, parses it and computes the key.
 * Returns null for a job whose `unique` is absent, `undefined` or `null`: it is enqueued as a
 * plain job.
 *
 * @throws InvalidJobInputError (`invalid_request`) naming every bad field.
 */
export function prepareUnique(job: JobInput, options: PrepareUniqueOptions = {}): PreparedUnique | null {
  if (!isPlainObject(job)) throw new InvalidJobInputError([{ path: 'job', message: 'must be a plain object' }]);
  const own = ownJobInput(job);
  let policy: UniquePolicy | null = null;
  let policyToken: object | undefined;
  let policyIssues: readonly ValidationIssue[] = [];
  let reportOnly = false;
  if (own.unique !== undefined && own.unique !== null) {
    try {
      let unique: unknown;
      ({ unique, reportOnly } = splitReportOnly(own.unique));
      ({ policy, token: policyToken } = parseUniquePolicyRemembered(unique));
    } catch (error) {
      if (!(error instanceof InvalidJobInputError)) throw error;
      policyIssues = error.issues;
    }
  }
  const issues = fieldIssues(own);
  // args hashed whole are walked once, by the key computation below, with the same rules.
  const argsHashedWhole = policy !== null && policy.keys.includes('args') && policy.args_keys === null;
  jsonIssues(own, !argsHashedWhole, issues);
  issues.push(...policyIssues);
  if (policy !== null) {
    const supported = options.extensions ?? [];
    for (const extension of policyExtensions(policy)) {
      if (!supported.includes(extension)) {
        issues.push({
          path: `unique.${extension}`,
          message: `is an extension this backend does not support (it supports: ${supported.length > 0 ? supported.join(', ') : 'none'})`,
        });
      }
    }
  }
  if (policy?.period != null) {
    const now = options.now ?? Date.now();
    // Under the scheduled_at anchor the window is measured from the job's due time.
    const scheduled = policy.x_period_anchor === 'scheduled_at' && own.scheduled_at !== undefined ? scheduledAtMs(own.scheduled_at) : null;
    const problem = periodEndProblem(Math.max(now, scheduled ?? now), parsePeriod(policy.period));
    if (problem) issues.push({ path: 'unique.period', message: problem });
  }
  if (issues.length > 0) throw new InvalidJobInputError(issues);
  if (policy === null) return null;
  const { key, canonical } = computeUniquenessKey(own, policy);
  const prepared: PreparedUnique = policyToken === undefined ? { policy, key, canonical } : { policy, key, canonical, policyToken };
  if (reportOnly) prepared.reportOnly = true;
  return prepared;
}

/**
 * Problems with the job's own fields (not its policy), each naming the field: the portable
 * rules for `type`, `queue`, `id`, `priority`, `max_attempts` and `scheduled_at`, and `args` and
 * `meta` as JSON in full.
 */
export function jobInputIssues(job: JobInput): ValidationIssue[] {
  if (!isPlainObject(job)) return [{ path: 'job', message: 'must be a plain object' }];
  const own = ownJobInput(job);
  const issues = fieldIssues(own);
  jsonIssues(own, true, issues);
  return issues;
}

/**
 * The job's fields as a fresh null-prototype object in which each of the nine `JobInput` fields
 * is an own property, `undefined` where the job does not have it as its own: what every later
 * step (and a backend) reads, so that nothing inherited is taken for a field, even after a
 * spread (`{ ...own, id }` keeps the explicit `undefined`s). Other properties are not copied.
 */
export function ownJobInput(job: JobInput): JobInput {
  const own = Object.create(null) as Record<string, unknown>;
  for (const field of JOB_FIELDS) own[field] = Object.hasOwn(job, field) ? (job as unknown as Record<string, unknown>)[field] : undefined;
  return own as unknown as JobInput;
}

const JOB_FIELDS = ['type', 'args', 'queue', 'meta', 'id', 'scheduled_at', 'max_attempts', 'priority', 'unique'] as const;

function fieldIssues(job: JobInput): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  identifier(job.type, 'type', issues);
  if (job.queue !== undefined && identifier(job.queue, 'queue', issues) && job.queue.includes(':')) {
    issues.push({ path: 'queue', message: 'must not contain ":" (BullMQ refuses it in queue names)' });
  }
  if (job.id !== undefined && identifier(job.id, 'id', issues)) {
    if (job.id.includes(':')) issues.push({ path: 'id', message: 'must not contain ":" (BullMQ refuses it in job ids)' });
    else if (isIntegerId(job.id)) {
      issues.push({
        path: 'id',
        message: "must not be an integer string (BullMQ refuses those as custom ids; Graphile Worker's own ids are all digits)",
      });
    }
  }
  if (job.meta !== undefined && !isPlainObject(job.meta)) issues.push({ path: 'meta', message: 'must be a plain object' });
  if (job.max_attempts !== undefined && !integerIn(job.max_attempts, MAX_ATTEMPTS_RANGE)) {
    issues.push({ path: 'max_attempts', message: `must be an integer from ${MAX_ATTEMPTS_RANGE.min} to ${MAX_ATTEMPTS_RANGE.max}` });
  }
  if (job.priority !== undefined && !integerIn(job.priority, PRIORITY_RANGE)) {
    issues.push({ path: 'priority', message: `must be an integer from ${PRIORITY_RANGE.min} to ${PRIORITY_RANGE.max}` });
  }
  if (job.scheduled_at !== undefined) {
    const ms = scheduledAtMs(job.scheduled_at);
    if (ms === null) {
      issues.push({ path: 'scheduled_at', message: 'must be a Date or an ISO 8601 timestamp with a time zone (ojs-core §5.5)' });
    } else if (ms < TIME_RANGE_MS.min || ms > TIME_RANGE_MS.max) {
      issues.push({
        path: 'scheduled_at',
        message: `must be from ${new Date(TIME_RANGE_MS.min).toISOString()} to ${new Date(TIME_RANGE_MS.max).toISOString()}`,
      });
    }
  }
  return issues;
}

function jsonIssues(job: JobInput, checkArgs: boolean, issues: ValidationIssue[]): void {
  if (checkArgs) {
    // U+0000 is allowed in args: every backend stores them as JSON text (Graphile Worker's
    // payload is `json`, not `jsonb`).
    const problem = validateJson(job.args, 'args');
    if (problem) issues.push(problem);
  }
  // (A meta that is not a plain object is a field issue already.)
  if (job.meta !== undefined && isPlainObject(job.meta)) {
    const problem = validateJson(job.meta, 'meta', { noNul: true });
    if (problem) issues.push(problem);
  }
}

/** A non-empty, well-formed string of at most MAX_IDENTIFIER_LENGTH code points without U+0000. */
function identifier(value: unknown, path: string, issues: ValidationIssue[]): value is string {
  if (typeof value !== 'string' || value.length === 0) {
    issues.push({ path, message: 'must be a non-empty string' });
    return false;
  }
  const before = issues.length;
  if (value.length > MAX_IDENTIFIER_LENGTH && codePoints(value) > MAX_IDENTIFIER_LENGTH) {
    issues.push({ path, message: `must be at most ${MAX_IDENTIFIER_LENGTH} characters` });
  }
  if (value.includes('\u0000')) issues.push({ path, message: 'must not contain U+0000 (PostgreSQL text cannot hold it)' });
  if (!value.isWellFormed()) issues.push({ path, message: 'contains a lone UTF-16 surrogate, which is not valid Unicode' });
  return issues.length === before;
}

function codePoints(value: string): number {
  let count = 0;
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < value.length) {
      const next = value.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
    }
    count++;
  }
  return count;
}

/**
 * BullMQ's own test for a custom id it refuses (`${parseInt(id, 10)}` === id: "12", "-3"), and
 * any all-digit id ("0123"), which could collide with a Graphile Worker job id.
 */
function isIntegerId(id: string): boolean {
  return `${parseInt(id, 10)}` === id || /^[0-9]+$/.test(id);
}

function integerIn(value: unknown, range: { min: number; max: number }): boolean {
  return Number.isInteger(value) && (value as number) >= range.min && (value as number) <= range.max;
}

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$/i;

/** `scheduled_at` as epoch ms, or null when it is not a valid time with a time zone. */
export function scheduledAtMs(value: string | Date): number | null {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.getTime();
  if (typeof value !== 'string' || !TIMESTAMP.test(value)) return null;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? null : ms;
}
