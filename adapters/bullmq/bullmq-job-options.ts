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
  const issue = (option: string, message: string): void => {
    issues.push({ path: `${prefix}.${option}`, message });
  };
  const { jobId, priority, delay, attempts, backoff, sizeLimit } = opts as Record<string, unknown> & JobsOptions;

  if (jobId !== undefined) {
    if (typeof jobId !== 'string') issue('jobId', `must be a string (got ${typeof jobId})`);
    // BullMQ reads '' as "no id" and gives a counter id: an empty OJS id is refused instead (§5.1).
    else if (jobId === '') issue('jobId', 'must not be empty');
    else if (`${parseInt(jobId, 10)}` === jobId) issue('jobId', 'cannot be an integer string (BullMQ reserves those for its own ids)');
    else if (jobId.includes(':') && jobId.split(':').length !== 3) issue('jobId', 'cannot contain ":" (BullMQ)');
    else if (jobId === '0' || jobId.startsWith('0:')) issue('jobId', "cannot be '0' or start with '0:' (BullMQ)");
  }
  if (priority !== undefined && !(Number.isInteger(priority) && priority >= 0 && priority <= BULLMQ_MAX_PRIORITY)) {
    issue('priority', `must be an integer from 0 to ${BULLMQ_MAX_PRIORITY} (BullMQ)`);
  }
  if (delay !== undefined && !(Number.isInteger(delay) && delay >= 0 && Date.now() + delay <= MAX_DATE_MS)) {
    issue('delay', 'must be a whole number of milliseconds, 0 or more, ending before the latest date JavaScript can hold');
  }
  if (attempts !== undefined && !(Number.isSafeInteger(attempts) && attempts >= 0)) {
    issue('attempts', 'must be an integer, 0 or more');
  }
  if (backoff !== undefined && backoff !== null && typeof backoff === 'object') {
    const { jitter } = backoff as { jitter?: unknown };
    if (jitter !== undefined && !(typeof jitter === 'number' && jitter >= 0 && jitter <= 1))
      issue('backoff.jitter', 'must be a number from 0 to 1 (BullMQ)');
  }
  const exclusive = EXCLUSIVE.filter((option) => (opts as Record<string, unknown>)[option]);
  if (exclusive.length > 1) issue(exclusive[1]!, `cannot be used together with ${exclusive[0]} (BullMQ)`);
  if (sizeLimit !== undefined && sizeLimit !== 0) {
    if (!(typeof sizeLimit === 'number' && sizeLimit > 0)) issue('sizeLimit', 'must be a number of bytes, 0 (none) or more');
    else if (Buffer.byteLength(jsonOf(data)) > sizeLimit) issue('sizeLimit', `the job's data is larger than ${sizeLimit} bytes (BullMQ)`);
  }
  return issues;
}

/** `data` as BullMQ stores it; '' when it is not JSON (the core's check reports that). */
function jsonOf(data: unknown): string {
  try {
    return JSON.stringify(data) ?? '';
  } catch {
    return '';
  }
}
