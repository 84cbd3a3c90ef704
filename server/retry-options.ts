/**
 * `options.retry` of a PUSH (ojs-json-format §3.4, in the conformance suite's form) read into a
 * `RetryPolicy`, every problem an issue naming its field (`options.retry.backoff_coefficient`).
 *
 * Fields: `max_attempts` (1..32767), `initial_interval` / `max_interval` (ISO 8601 durations,
 * `"PT1S"`, `"P1DT2H"`) or `initial_interval_ms` / `max_interval_ms`, `backoff_coefficient` (≥ 1),
 * `backoff_type` or `backoff_strategy` (`none`, `constant`, `linear`, `exponential`), `jitter`,
 * `non_retryable_errors` (names or `*`-prefixes), `on_exhaustion` (`discard`, `dead_letter`).
 * Unknown fields are ignored. A policy is recorded only when the request gives more than
 * `max_attempts` / `on_exhaustion`: otherwise the host's own backoff stays (docs/migration.md).
 */
import type { ValidationIssue } from '../src/errors.js';
import { MAX_ATTEMPTS_RANGE } from '../src/input-limits.js';
import { isPlainObject } from '../src/json-rules.js';
import { relativeMs } from './relative-time.js';
import { BACKOFF_TYPES, DEFAULT_RETRY_POLICY, type BackoffType, type RetryPolicy } from './retry-policy.js';

/** Where a retry policy's issues are named; a PUSH refused only for these is 422 (ojs-server.ts). */
export const RETRY_ISSUE_PATH = /(^|\.)options\.retry(\.|$)/;
const MAX_NON_RETRYABLE = 100;
const MAX_ERROR_NAME = 255;
/** Fields that shape the schedule or the classification: with any of them, the policy replaces the host's backoff. */
const SHAPING = [
  'initial_interval',
  'initial_interval_ms',
  'max_interval',
  'max_interval_ms',
  'backoff_coefficient',
  'backoff_type',
  'backoff_strategy',
  'jitter',
  'non_retryable_errors',
];

export interface RetryOptions {
  maxAttempts?: number;
  policy?: RetryPolicy;
}

export function readRetryOptions(retry: unknown, issues: ValidationIssue[]): RetryOptions {
  if (retry === undefined) return {};
  const at = 'options.retry';
  if (!isPlainObject(retry)) {
    issues.push({ path: at, message: 'must be an object' });
    return {};
  }
  const before = issues.length;
  const read: RetryOptions = {};
  if (retry.max_attempts !== undefined) {
    const value = retry.max_attempts;
    if (!Number.isInteger(value) || (value as number) < MAX_ATTEMPTS_RANGE.min || (value as number) > MAX_ATTEMPTS_RANGE.max) {
      issues.push({
        path: `${at}.max_attempts`,
        message: `must be an integer from ${MAX_ATTEMPTS_RANGE.min} to ${MAX_ATTEMPTS_RANGE.max}`,
      });
    } else read.maxAttempts = value as number;
  }
  const policy: RetryPolicy = { ...DEFAULT_RETRY_POLICY, nonRetryableErrors: [] };
  const initial = interval(retry, 'initial_interval', issues);
  const max = interval(retry, 'max_interval', issues);
  if (initial !== undefined) policy.initialIntervalMs = initial;
  if (max !== undefined) policy.maxIntervalMs = max;
  if (policy.maxIntervalMs < policy.initialIntervalMs && issues.length === before) {
    issues.push({
      path: `${at}.${max !== undefined ? 'max_interval' : 'initial_interval'}`,
      message: 'max_interval must be at least initial_interval',
    });
  }
  if (retry.backoff_coefficient !== undefined) {
    const value = retry.backoff_coefficient;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 1) {
      issues.push({ path: `${at}.backoff_coefficient`, message: 'must be a number ≥ 1' });
    } else policy.backoffCoefficient = value;
  }
  const backoff = backoffType(retry, issues);
  if (backoff !== undefined) policy.backoff = backoff;
  if (retry.jitter !== undefined) {
    if (typeof retry.jitter !== 'boolean') issues.push({ path: `${at}.jitter`, message: 'must be a boolean' });
    else policy.jitter = retry.jitter;
  }
  const names = retry.non_retryable_errors;
  if (names !== undefined) {
    if (
      !Array.isArray(names) ||
      names.length > MAX_NON_RETRYABLE ||
      !names.every((name) => typeof name === 'string' && name !== '' && name.length <= MAX_ERROR_NAME)
    ) {
      issues.push({
        path: `${at}.non_retryable_errors`,
        message: `must be an array of at most ${MAX_NON_RETRYABLE} non-empty strings of at most ${MAX_ERROR_NAME} characters`,
      });
    } else policy.nonRetryableErrors = [...names];
  }
  if (retry.on_exhaustion !== undefined) {
    if (retry.on_exhaustion !== 'discard' && retry.on_exhaustion !== 'dead_letter') {
      issues.push({ path: `${at}.on_exhaustion`, message: 'must be "discard" or "dead_letter"' });
    } else policy.onExhaustion = retry.on_exhaustion;
  }
  if (issues.length === before && SHAPING.some((field) => retry[field] !== undefined)) read.policy = policy;
  return read;
}

/** `<name>` (an ISO 8601 duration) or `<name>_ms` (a number of ms): the first given. */
function interval(retry: Record<string, unknown>, name: string, issues: ValidationIssue[]): number | undefined {
  const duration = retry[name];
  if (duration !== undefined) {
    // The relative-time grammar without its `+`: `PT1S`, `P1D`, `P1DT2H30M`.
    const ms = typeof duration === 'string' && !duration.startsWith('+') ? relativeMs(`+${duration}`) : null;
    if (ms === null) issues.push({ path: `options.retry.${name}`, message: 'must be an ISO 8601 duration such as "PT1S"' });
    return ms ?? undefined;
  }
  const ms = retry[`${name}_ms`];
  if (ms === undefined) return undefined;
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
    issues.push({ path: `options.retry.${name}_ms`, message: 'must be a non-negative number of milliseconds' });
    return undefined;
  }
  return ms;
}

/** `backoff_type`, or `backoff_strategy` as the suite spells it; both given must agree. */
function backoffType(retry: Record<string, unknown>, issues: ValidationIssue[]): BackoffType | undefined {
  const given = (['backoff_type', 'backoff_strategy'] as const).filter((field) => retry[field] !== undefined);
  for (const field of given) {
    if (!BACKOFF_TYPES.includes(retry[field] as BackoffType)) {
      issues.push({ path: `options.retry.${field}`, message: `must be one of ${BACKOFF_TYPES.join(', ')}` });
      return undefined;
    }
  }
  if (given.length === 2 && retry.backoff_type !== retry.backoff_strategy) {
    issues.push({ path: 'options.retry.backoff_strategy', message: 'differs from options.retry.backoff_type: give one' });
    return undefined;
  }
  return given.length > 0 ? (retry[given[0]!] as BackoffType) : undefined;
}
