/**
 * `ojs-unique/graphile-worker`: OJS unique jobs, strongly, on Graphile Worker 0.18.x.
 * See docs/graphile-worker.md.
 */
export { makeUniqueWorkerUtils } from './graphile-worker-utils.js';
export type { UniqueKeyLookup, UniqueWorkerUtils, UniqueWorkerUtilsOptions } from './graphile-worker-utils.js';
export type { UniquenessKeyRef } from '../../src/key-lookup.js';
export type { UniqueAddJob, UniqueAddJobs } from './graphile-worker-unique-add.js';
export { addJobWithClient } from './graphile-worker-add-job.js';
export type { PlainAddJobsSpec, UniqueAddJobsSpec, UniqueAddJobsSpecWithPolicy } from './graphile-worker-add-job.js';
export type { UniqueEnqueueOptions, UniqueEntryPointOptions } from './graphile-worker-schema-handle.js';
export type { UniqueAddEvent, UniqueAddHook } from './graphile-worker-unique-add-hook.js';
export type { PlainTaskSpec, TaskIdentifier, TaskPayload, UniqueTaskSpec, UniqueTaskSpecWithPolicy } from './graphile-worker-task-spec.js';
export { withUniqueHelpers } from './graphile-worker-task-helpers.js';
export { runInJobTraceContext } from './graphile-worker-telemetry.js';
export type { UniqueJobHelpers, UniqueTask, UniqueTaskList, WithUniqueHelpers } from './graphile-worker-task-helpers.js';
export { makeUniqueJobsPreset } from './graphile-worker-preset.js';
export type { UniqueJobsPresetOptions } from './graphile-worker-preset.js';
export { createGraphileWorkerBackend } from './graphile-worker-backend.js';
export { runUniqueJobsMigrations } from './graphile-worker-migrate.js';
export type { UniqueJobsMigrationOptions, UniqueJobsMigrationResult } from './graphile-worker-migrate.js';
export { UniqueSchemaVersionError } from './graphile-worker-install-state.js';
export type { GraphileWorkerBackend, GraphileWorkerBackendOptions } from './graphile-worker-backend.js';
export { RECLAIM_TASK_IDENTIFIER, makeReclaimTask } from './graphile-worker-reclaim.js';
export { UNIQUE_CRON_TASK_IDENTIFIER, makeUniqueCronTask, uniqueCronItems } from './graphile-worker-cron.js';
export type { CronItemPolicy } from './graphile-worker-cron.js';
export type { ReclaimOptions, ReclaimResult, ReclaimTaskOptions } from './graphile-worker-reclaim.js';
export { DEFAULT_GRAPHILE_SCHEMA, DEFAULT_UNIQUE_SCHEMA } from './graphile-worker-sql.js';
export type { SchemaNames } from './graphile-worker-sql.js';
export type { PgClientLike, PgPoolLike } from './graphile-worker-pg.js';
export type { TransactionClientLike } from './graphile-worker-add-job.js';
