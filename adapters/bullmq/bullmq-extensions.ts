/**
 * The policy extensions the BullMQ adapter implements, on every entry point: the backend declares
 * them (`capabilities.unique_jobs.extensions`) and every entry point passes the same list to
 * `prepareUnique`, which refuses the others with the typed input error naming the field.
 */
import type { UniqueExtension } from '../../src/unique-policy.js';

export const BULLMQ_EXTENSIONS: readonly UniqueExtension[] = ['x_period_anchor', 'x_key', 'x_update', 'x_max_wait'];
