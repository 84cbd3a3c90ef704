/**
 * ojs-unique/internal: the building blocks the adapters share, for people writing a backend of
 * their own. Not covered by semver: any release may change or remove these.
 */
export { LIVE_STATES, TERMINAL_STATES } from './job-state.js';
export { CONFLICT_STRATEGIES, MAX_CALLER_KEY_LENGTH, UNIQUE_DIMENSIONS, compactUniquePolicy, policyExtensions } from './unique-policy.js';
export { DEFAULT_QUEUE, canonicalPreimage } from './uniqueness-key.js';
export { PERIOD_PATTERN, addPeriod, parsePeriod } from './period.js';
export type { Period } from './period.js';
export { decideConflict, decideUniqueConflict, insertionOrder, isDuplicate, periodAnchor } from './conflict-decision.js';
export type {
  ConflictCandidate,
  ConflictDecision,
  ConflictInput,
  SuccessorDecision,
  UniqueConflictDecision,
  UpdateDecision,
} from './conflict-decision.js';
export { prepareUnique, jobInputIssues, ownJobInput, scheduledAtMs } from './unique-enqueue.js';
export type { PreparedUnique, PrepareUniqueOptions } from './unique-enqueue.js';
export { MAX_ATTEMPTS_RANGE, MAX_IDENTIFIER_LENGTH, MAX_JSON_DEPTH, PRIORITY_RANGE, TIME_RANGE_MS } from './input-limits.js';
export { uuidv7 } from './uuid-v7.js';
export { explainUniqueAdd } from './unique-explain.js';
export type { ExplainCandidate, ExplainInput } from './unique-explain.js';
