/**
 * An OJS retry policy (ojs-json-format §3.4, the `retry` object of a PUSH) and what it decides
 * when a worker fails a job: the delay before the next attempt, and whether the error may be
 * retried at all. Pure: the delay is a function of the policy, the attempt that failed and a
 * random source (for jitter), so tests can pin the random source and assert exact bounds.
 *
 * Each store hands the delay to its host's own scheduling: memory's retry promotion, BullMQ's
 * delayed set (a `fixed` backoff of that delay for the failing attempt), Graphile's `run_at`
 * (docs/design/gateway.md, "Retries and dead letters").
 */
import type { JsonValue } from '../src/job.js';

/** How the interval grows from one attempt to the next. */
export type BackoffType = 'none' | 'constant' | 'linear' | 'exponential';
export const BACKOFF_TYPES: readonly BackoffType[] = ['none', 'constant', 'linear', 'exponential'];

export interface RetryPolicy {
  /** `none`: retry at once; `constant`: the initial interval each time; `linear`: n × initial; `exponential`: initial × coefficient^(n−1). */
  backoff: BackoffType;
  initialIntervalMs: number;
  /** The exponential backoff's factor (≥ 1). */
  backoffCoefficient: number;
  /** The cap on any delay, jitter included. */
  maxIntervalMs: number;
  /** Each delay scaled by a random factor in [0.5, 1.5), then capped. */
  jitter: boolean;
  /** Error types (or codes) never retried: exact names, or prefixes written with a trailing `*` (`"Auth.*"`, `"Auth*"`). */
  nonRetryableErrors: string[];
  /**
   * What a job that has no attempt left becomes. Both keep it as a dead letter (`discarded`,
   * listed by `GET /ojs/v1/dead-letter`): each host keeps its failed jobs (BullMQ's failed set,
   * Graphile's permanently failed rows), and OJS's `discarded` is the dead letter queue.
   */
  onExhaustion: 'discard' | 'dead_letter';
}

/**
 * OJS's defaults (ojs-json-format §3.4): 1 s, doubling, at most 5 min, jittered. The stores use
 * them for a job whose PUSH gave a policy without these fields; a job without any policy keeps its
 * host's own backoff (memory: DEFAULT_RETRY_POLICY without jitter, so that a retry's time is
 * predictable there).
 */
export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  backoff: 'exponential',
  initialIntervalMs: 1000,
  backoffCoefficient: 2,
  maxIntervalMs: 300_000,
  jitter: true,
  nonRetryableErrors: [],
  onExhaustion: 'discard',
};

/** A random number in [0, 1), as `Math.random`. */
export type RandomSource = () => number;

/**
 * The delay in ms before the attempt after `attempt` (1: the first attempt failed), a whole
 * number. Capped at `maxIntervalMs` after jitter, so the cap holds for every draw.
 */
export function retryDelayMs(policy: RetryPolicy, attempt: number, random: RandomSource = Math.random): number {
  const n = Math.max(1, Math.floor(attempt));
  let delay: number;
  switch (policy.backoff) {
    case 'none':
      return 0;
    case 'constant':
      delay = policy.initialIntervalMs;
      break;
    case 'linear':
      delay = policy.initialIntervalMs * n;
      break;
    // A policy recorded by an earlier release has no `backoff`: it was exponential.
    default:
      delay = policy.initialIntervalMs * policy.backoffCoefficient ** (n - 1);
      break;
  }
  // Capped before the jitter too: a huge exponent must not make Infinity × 0.5.
  delay = Math.min(delay, policy.maxIntervalMs);
  if (policy.jitter) delay = Math.min(delay * (0.5 + random()), policy.maxIntervalMs);
  return Math.round(delay);
}

/** What a worker's failure is matched on: its `type`, its `code`, and `details.error_class` (the class a worker names there). */
export interface FailureNames {
  type: string;
  code?: string;
  details?: JsonValue;
}

/**
 * Whether `error` is one the policy never retries: its type, code or `details.error_class`
 * equals a listed name, or starts with a listed prefix (`"Auth.*"` and `"Auth*"` both match
 * `"AuthenticationError"` and `"Auth.TokenExpired"`: the `*`, and a `.` before it, as in the
 * regular expression `Auth.*`).
 */
export function isNonRetryable(policy: RetryPolicy | undefined, error: FailureNames): boolean {
  if (!policy?.nonRetryableErrors?.length) return false;
  const names = [error.type, error.code, errorClassOf(error.details)].filter((name): name is string => typeof name === 'string');
  return policy.nonRetryableErrors.some((pattern) => {
    if (!pattern.endsWith('*')) return names.includes(pattern);
    const prefix = pattern.endsWith('.*') ? pattern.slice(0, -2) : pattern.slice(0, -1);
    return names.some((name) => name.startsWith(prefix));
  });
}

function errorClassOf(details: JsonValue | undefined): unknown {
  return details !== null && typeof details === 'object' && !Array.isArray(details) ? details.error_class : undefined;
}
