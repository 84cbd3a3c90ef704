/**
 * ojs-unique: the OJS unique-jobs spec layer (policy, key, decision, errors) and the in-memory
 * reference backend. Host adapters are subpath exports: `ojs-unique/bullmq`,
 * `ojs-unique/graphile-worker`.
 */
export { OJS_JOB_STATES, TERMINAL_STATES } from './job.js';
export type { JobInput, JsonValue, OjsJob, OjsJobState } from './job.js';

export {
  CONFLICT_STRATEGIES,
  DEFAULT_UNIQUE_STATES,
  UNIQUE_DIMENSIONS,
  UNIQUE_STATE_GROUPS,
  parseUniquePolicy,
  compactUniquePolicy,
  uniquePolicySchema,
} from './unique-policy.js';
export type { ConflictStrategy, UniqueDimension, UniquePolicy, UniquePolicyInput } from './unique-policy.js';
export { uniquePolicyJsonSchema } from './unique-policy-json-schema.js';

export { DEFAULT_QUEUE, canonicalPreimage, computeUniquenessKey } from './uniqueness-key.js';
export type { UniquenessKey } from './uniqueness-key.js';
export { PERIOD_PATTERN, addPeriod, parsePeriod } from './period.js';
export type { Period } from './period.js';

export { decideConflict, insertionOrder, isDuplicate } from './conflict-decision.js';
export type { ConflictCandidate, ConflictDecision, ConflictInput } from './conflict-decision.js';
export { prepareUnique, jobInputIssues, ownJobInput, scheduledAtMs } from './unique-enqueue.js';
export type { PreparedUnique, PrepareUniqueOptions } from './unique-enqueue.js';
export { MAX_ATTEMPTS_RANGE, MAX_IDENTIFIER_LENGTH, MAX_JSON_DEPTH, PRIORITY_RANGE, TIME_RANGE_MS } from './input-limits.js';
export { uuidv7 } from './uuid-v7.js';

export {
  BackendError,
  DuplicateJobError,
  InvalidTransitionError,
  InvalidUniquePolicyError,
  JobNotFoundError,
  OjsUniqueError,
  isBackendError,
  isDuplicateJobError,
  isInvalidUniquePolicyError,
  isOjsUniqueError,
} from './errors.js';
export type { DuplicateJobDetails, OjsUniqueErrorCode, ValidationIssue } from './errors.js';

export type { EnqueueResult, UniqueJobsBackend, UniqueJobsCapabilities } from './unique-jobs-backend.js';

export { createMemoryBackend } from '../adapters/memory/memory-backend.js';
export type { MemoryBackend, MemoryBackendOptions } from '../adapters/memory/memory-backend.js';
