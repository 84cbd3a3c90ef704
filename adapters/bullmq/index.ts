/**
 * ojs-unique/bullmq: OJS unique jobs on BullMQ (docs/bullmq.md).
 *
 *  - `withUniqueness(queue)`: an existing `Queue` whose `add`/`addBulk` accept `unique`; or a
 *    `FlowProducer`, whose flows accept it on nodes without children.
 *  - `createBullMQBackend({ connection })`: the core's `UniqueJobsBackend` over BullMQ.
 *  - `removeUniquenessIndex(queue)`: deletes the adapter's sidecar keys (BullMQ's `obliterate`
 *    does not know them).
 *  - `readUniqueFields(queue, job)`: a job's policy, key and duplicate count, for a dashboard.
 */
export { withUniqueness } from './with-uniqueness.js';
export { DEFAULT_CANCELLED_RETENTION_MS } from './bullmq-retention.js';
export type {
  FoundJob,
  UniqueJob,
  UniqueJobsOptions,
  UniqueOutcome,
  UniqueQueue,
  UniqueQueueOptions,
  WithUniquenessOptions,
} from './bullmq-types.js';
export { createBullMQBackend, DEFAULT_COMMAND_TIMEOUT_MS, DEFAULT_MAX_RETRIES_PER_REQUEST } from './bullmq-backend.js';
export type { BullMQBackend, BullMQBackendOptions } from './bullmq-backend.js';
export { removeUniquenessIndex } from './remove-uniqueness-index.js';
export { readUniqueFields } from './read-unique-fields.js';
export type { UniqueFields } from './read-unique-fields.js';
export { SUPPORTED_BULLMQ_RANGE } from './bullmq-host.js';
export {
  makeUniqueSchedulerProcessor,
  isUniqueSchedulerRelay,
  UNIQUE_SCHEDULER_JOB_NAME,
  RELAY_ATTEMPTS,
} from './unique-job-schedulers.js';
export type { RelayData, RelayResult } from './unique-job-schedulers.js';
export type { UniqueSchedulerTemplateOptions } from './bullmq-types.js';
export type { UniqueFlowJob, UniqueFlowProducer, UniqueJobNode } from './with-unique-flows.js';
export type { UniquenessKeyRef } from '../../src/key-lookup.js';
