/**
 * BullMQ's own job-option rules (classes/job.js `validateOptions`, classes/queue.js `addJob`),
 * checked before anything is sent so that a unique add with a bad option is an `invalid_request`
 * naming it, never a `BackendError` ("maybe written") or an untyped `Error`.
 *
 * Stricter than BullMQ where BullMQ lets a value through that breaks the add or the job later:
 * a NaN or negative `priority` and a non-integer or negative `delay`/`attempts` (BullMQ stores
 * them as they are; the scripts then compute scores from them).
 */
import type { JobsOptions } from 'bullmq';
import type { ValidationIssue } from '../../src/errors.js';
import { BULLMQ_MAX_PRIORITY } from './bullmq-host.js';

/** Latest time a JavaScript Date (and so BullMQ's delayed timestamp) can hold, in ms. */
const MAX_DATE_MS = 8.64e15;

/** Options BullMQ refuses to combine (only one may be set). */
const EXCLUSIVE = ['removeDependencyOnFailure', 'failParentOnFailure', 'continueParentOnFailure', 'ignoreDependencyOnFailure'] as const;

/** The issues of `opts` (already merged with the queue's defaults), each naming `<prefix>.<option>`. */
export function bullmqOptionIssues(opts: JobsOptions, data: unknown, prefix = 'opts'): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const { jobId, priority, delay, attempts, backoff, sizeLimit } = opts as Record<string, unknown> & JobsOptions;

  if (jobId !== undefined) {
    if (typeof jobId !== 'string') pushIssue(issues, prefix, 'jobId', `must be a string (got ${typeof jobId})`);
    // BullMQ reads '' as "no id" and gives a counter id: an empty OJS id is refused instead (§5.1).
    else if (jobId === '') pushIssue(issues, prefix, 'jobId', 'must not be empty');
    else if (`${parseInt(jobId, 10)}` === jobId)
      pushIssue(issues, prefix, 'jobId', 'cannot be an integer string (BullMQ reserves those for its own ids)');
    else if (jobId.includes(':') && jobId.split(':').length !== 3) pushIssue(issues, prefix, 'jobId', 'cannot contain ":" (BullMQ)');
    else if (jobId === '0' || jobId.startsWith('0:')) pushIssue(issues, prefix, 'jobId', "cannot be '0' or start with '0:' (BullMQ)");
  }
  if (priority !== undefined && !(Number.isInteger(priority) && priority >= 0 && priority <= BULLMQ_MAX_PRIORITY)) {
    pushIssue(issues, prefix, 'priority', `must be an integer from 0 to ${BULLMQ_MAX_PRIORITY} (BullMQ)`);
  }
  if (delay !== undefined && !(Number.isInteger(delay) && delay >= 0 && Date.now() + delay <= MAX_DATE_MS)) {
    pushIssue(
      issues,
      prefix,
      'delay',
      'must be a whole number of milliseconds, 0 or more, ending before the latest date JavaScript can hold',
    );
  }
  if (attempts !== undefined && !(Number.isSafeInteger(attempts) && attempts >= 0)) {
    pushIssue(issues, prefix, 'attempts', 'must be an integer, 0 or more');
  }
  if (backoff !== undefined && backoff !== null && typeof backoff === 'object') {
    const { jitter } = backoff as { jitter?: unknown };
    if (jitter !== undefined && !(typeof jitter === 'number' && jitter >= 0 && jitter <= 1))
      pushIssue(issues, prefix, 'backoff.jitter', 'must be a number from 0 to 1 (BullMQ)');
  }
  let first: string | undefined;
  for (const option of EXCLUSIVE) {
    if (!(opts as Record<string, unknown>)[option]) continue;
    if (first === undefined) first = option;
    else {
      pushIssue(issues, prefix, option, `cannot be used together with ${first} (BullMQ)`);
      break;
    }
  }
  if (sizeLimit !== undefined && sizeLimit !== 0) {
    if (!(typeof sizeLimit === 'number' && sizeLimit > 0))
      pushIssue(issues, prefix, 'sizeLimit', 'must be a number of bytes, 0 (none) or more');
    else if (Buffer.byteLength(jsonOf(data)) > sizeLimit)
      pushIssue(issues, prefix, 'sizeLimit', `the job's data is larger than ${sizeLimit} bytes (BullMQ)`);
  }
  return issues;
}

function pushIssue(issues: ValidationIssue[], prefix: string, option: string, message: string): void {
  issues.push({ path: `${prefix}.${option}`, message });
}

/** `data` as BullMQ stores it; '' when it is not JSON (the core's check reports that). */
function jsonOf(data: unknown): string {
  try {
    return JSON.stringify(data) ?? '';
  } catch {
    return '';
  }
}
