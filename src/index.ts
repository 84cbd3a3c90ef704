/**
 * ojs-unique: the OJS unique-jobs spec layer: policies, uniqueness keys and typed errors.
 *
 * Backends are subpath exports: `ojs-unique/bullmq`, `ojs-unique/graphile-worker` and the
 * in-memory reference `ojs-unique/memory`. Helpers meant for adapter authors live in
 * `ojs-unique/internal`, which follows no semver promise.
 */
export { OJS_JOB_STATES } from './job.js';
export type { JobInput, JsonValue, OjsJob, OjsJobState } from './job.js';

export { DEFAULT_UNIQUE_STATES, UNIQUE_STATE_GROUPS, parseUniquePolicy } from './unique-policy.js';
export type { ConflictStrategy, UniqueDimension, UniquePolicy, UniquePolicyInput } from './unique-policy.js';
export { uniquePolicyJsonSchema } from './unique-policy-json-schema.js';
export { computeUniquenessKey } from './uniqueness-key.js';
export type { UniquenessKey } from './uniqueness-key.js';
export { OJS_ARGS_PAYLOAD_KEY, argsToPayload, payloadToArgs } from './ojs-args-payload.js';

export {
  BackendError,
  DuplicateJobError,
  InvalidJobInputError,
  InvalidTransitionError,
  JobNotFoundError,
  OjsUniqueError,
  isBackendError,
  isDuplicateJobError,
  isInvalidJobInputError,
  isOjsUniqueError,
} from './errors.js';
export type { DuplicateJobDetails, OjsUniqueErrorCode, ValidationIssue } from './errors.js';

export type { EnqueueResult, UniqueJobsBackend, UniqueJobsCapabilities } from './unique-jobs-backend.js';
