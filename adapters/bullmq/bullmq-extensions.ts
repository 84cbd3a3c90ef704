/**
 * The policy extensions the BullMQ adapter implements, on every entry point: the backend declares
 * them (`capabilities.unique_jobs.extensions`) and every entry point passes the same list to
 * `prepareUnique`, which refuses the others with the typed input error naming the field.
 */
import type { ValidationIssue } from '../../src/errors.js';
import type { UniqueExtension, UniquePolicy } from '../../src/unique-policy.js';

export const BULLMQ_EXTENSIONS: readonly UniqueExtension[] = ['x_period_anchor', 'x_key', 'x_update', 'x_max_wait', 'x_successor'];

/**
 * What the BullMQ adapter refuses of a declared extension, beside `prepareUnique`'s checks, each
 * naming the field: a flow node cannot keep an `x_successor` (its parent would wait for a job that
 * does not exist yet), nor can a job of the backend's `enqueueMany` (bullmq-backend.ts: one
 * unique-flow script, whose check pass does not keep one). An `x_successor` add whose active job is in another queue (a key without
 * the `queue` dimension) is refused when met, by unique-add (`successor_queue`): BullMQ's finishing
 * script adds a successor to the queue of the job it waited for (docs/design/successor.md).
 */
export function bullmqExtensionIssues(policy: UniquePolicy, flowNode: boolean): ValidationIssue[] {
  if (policy.x_successor !== undefined && flowNode)
    return [{ path: 'unique.x_successor', message: 'is not supported on a flow node on BullMQ' }];
  return [];
}
