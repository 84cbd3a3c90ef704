/**
 * ojs-unique: the OJS unique-jobs spec layer: policies, uniqueness keys and typed errors.
 *
 * Backends are subpath exports: `ojs-unique/bullmq`, `ojs-unique/graphile-worker` and the
 * in-memory reference `ojs-unique/memory`. Helpers meant for adapter authors live in
 * `ojs-unique/internal`, which follows no semver promise.
 */
export { OJS_JOB_STATES, type OjsJobState } from './job-state.js';
export type { JobInput, JsonValue, OjsJob } from './job.js';

export {
  DEFAULT_UNIQUE_STATES,
  PERIOD_ANCHORS,
  UNIQUE_EXTENSIONS,
  UNIQUE_STATE_GROUPS,
  UPDATE_FIELDS,
  UPDATE_STATES,
  parseUniquePolicy,
} from './unique-policy.js';
export type {
  ConflictStrategy,
  PeriodAnchor,
  UniqueDimension,
  UniqueExtension,
  UniquePolicy,
  UniquePolicyInput,
  UpdateField,
  UpdateInPlace,
  UpdateState,
} from './unique-policy.js';
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
  UntranslatableOptionError,
  isBackendError,
  isDuplicateJobError,
  isInvalidJobInputError,
  isOjsUniqueError,
  isUntranslatableOptionError,
} from './errors.js';
export type { DuplicateJobDetails, OjsUniqueErrorCode, ValidationIssue } from './errors.js';

export { REPORT_ONLY_FIELD } from './report-only-mark.js';
export type { ReportOnlyAnswer, WouldBe } from './report-only.js';
export type { RegisteredPolicies } from './registered-policies.js';
export type { EnqueueResult, PendingSuccessor, UniqueJobsBackend, UniqueJobsCapabilities } from './unique-jobs-backend.js';
export type { ExplainOutcome, ExplainedJob, NotCountedReason, UniqueExplanation } from './unique-explain.js';
