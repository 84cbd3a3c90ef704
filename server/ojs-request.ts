/**
 * Reads an OJS PUSH request body (ojs-http-binding §9.1, ojs-json-format) into the store's job
 * input, checking the wire rules the library's core does not know (lowercase UUIDv7 ids, the
 * dot-namespaced type, the queue pattern, priority −100..100, `args` an array) and collecting
 * every problem, each naming its field. The unique-jobs rules are then the core's
 * (`prepareUnique`, run by the store), so a bad policy is the same `invalid_request` as everywhere.
 *
 * The policy is read from `options.unique` or, as some SDKs send it, the top-level `unique`; the
 * SDKs' `key` is read as `keys` or `args_keys` (see readPolicy).
 */
import { InvalidJobInputError, type ValidationIssue } from '../src/errors.js';
import type { JsonValue } from '../src/job.js';
import { argsToPayload } from '../src/ojs-args-payload.js';
import { isPlainObject } from '../src/json-rules.js';
import type { GatewayJobInput } from './gateway-store.js';
import { readRetryOptions } from './retry-options.js';
import { relativeMs, type RelativeTimes } from './relative-time.js';
import { readRateLimit, type RateLimit } from './queue-rate-limit.js';

export const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
/**
 * ojs-core's `[a-z][a-z0-9_]*` segments, and `-` inside a segment: the conformance suite's level-1
 * files push types such as `worker.test.quiet-signal` (docs/decisions.md).
 */
const TYPE_PATTERN = /^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)*$/;
export const QUEUE_PATTERN = /^[a-z0-9][a-z0-9\-.]*$/;
export const MAX_QUEUE_NAME = 128;
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
export const OJS_PRIORITY_RANGE = { min: -100, max: 100 } as const;

/** Envelope fields with a meaning here; any other top-level field but SERVER_FIELDS is kept and reported back as sent. */
const KNOWN_FIELDS = new Set(['type', 'args', 'id', 'meta', 'options', 'unique', 'specversion']);
/**
 * Top-level fields the server sets (the job's state and run, its key, its times): dropped from a
 * PUSH, so that a client cannot have a job report a state, result or key it does not have.
 */
export const SERVER_FIELDS: ReadonlySet<string> = new Set([
  'state',
  'attempt',
  'max_attempts',
  'priority',
  'queue',
  'uniqueness_key',
  'enqueued_at',
  'created_at',
  'scheduled_at',
  'started_at',
  'completed_at',
  'cancelled_at',
  'discarded_at',
  'result',
  'error',
  'errors',
  'previous_state',
  'deduplicated',
  'updated',
  'changed',
  'replaced_job_id',
]);
/** Options the store has a field for; the others (`timeout_ms`, `tags`, `expires_at` …) are kept on the envelope. */
const STORED_OPTIONS = new Set(['queue', 'priority', 'delay_until', 'scheduled_at', 'retry', 'unique', 'pending']);

/** Where the policy was written: issues of the core name `unique.…`, answered as written. */
export interface ParsedPush {
  input: GatewayJobInput;
  policyPath: 'options.unique' | 'unique' | null;
  /** Times given relative to now (`"+PT5S"`), resolved on the store's clock before the enqueue (relative-time.ts). */
  relative: RelativeTimes | null;
  /** `options.rate_limit`: the limit the job sets on its queue (queue-rate-limit.ts). */
  rateLimit: RateLimit | null;
}

/** The dimensions a unique policy's `keys` may name (ojs-unique-jobs §2.1). */
const DIMENSIONS: ReadonlySet<string> = new Set(['type', 'queue', 'args', 'meta']);

/**
 * The policy with the SDKs' `key` field read deterministically (docs/migration.md): a list naming
 * only dimensions is `keys` (the Python SDK's `["type","queue","args"]`); any other list is
 * `args_keys` over `type` and `args` (the JS SDK's arg field names). `key` beside `keys`, or an
 * args-field `key` beside `args_keys`, says two things: refused, naming both fields.
 */
function readPolicy(policy: unknown, path: string, issues: ValidationIssue[]): unknown {
  if (!isPlainObject(policy) || !Object.hasOwn(policy, 'key')) return policy;
  const { key, ...rest } = policy;
  if (Object.hasOwn(policy, 'keys')) {
    issues.push({ path: `${path}.key`, message: `give either key or keys (${path}.keys), not both` });
    return rest;
  }
  if (!Array.isArray(key) || !key.every((name) => typeof name === 'string')) {
    issues.push({ path: `${path}.key`, message: 'must be an array of strings' });
    return rest;
  }
  if (key.every((name) => DIMENSIONS.has(name))) return { ...rest, keys: key };
  if (Object.hasOwn(policy, 'args_keys')) {
    issues.push({ path: `${path}.key`, message: `names args fields: give either key or args_keys (${path}.args_keys), not both` });
    return rest;
  }
  return { ...rest, keys: ['type', 'args'], args_keys: key };
}

/** @throws InvalidJobInputError naming every bad field. */
export function parsePush(body: unknown, at = ''): ParsedPush {
  const issues: ValidationIssue[] = [];
  if (!isPlainObject(body)) throw new InvalidJobInputError([{ path: at || 'body', message: 'must be a JSON object' }]);
  const { type, args, id, meta, options: rawOptions } = body;
  if (typeof type !== 'string' || !TYPE_PATTERN.test(type)) {
    issues.push({ path: 'type', message: type === undefined ? 'is required' : 'must be dot-separated segments of [a-z][a-z0-9_-]*' });
  }
  if (!Array.isArray(args)) issues.push({ path: 'args', message: args === undefined ? 'is required' : 'must be a JSON array' });
  if (id !== undefined && (typeof id !== 'string' || !UUID_V7.test(id))) issues.push({ path: 'id', message: 'must be a lowercase UUIDv7' });
  if (meta !== undefined && !isPlainObject(meta)) issues.push({ path: 'meta', message: 'must be an object' });
  if (rawOptions !== undefined && !isPlainObject(rawOptions)) issues.push({ path: 'options', message: 'must be an object' });
  const options = isPlainObject(rawOptions) ? rawOptions : {};
  const queue = options.queue;
  if (queue !== undefined && (typeof queue !== 'string' || queue.length > MAX_QUEUE_NAME || !QUEUE_PATTERN.test(queue))) {
    issues.push({ path: 'options.queue', message: 'must match [a-z0-9][a-z0-9.-]*, at most 128 characters' });
  }
  const priority = options.priority;
  if (
    priority !== undefined &&
    (!Number.isInteger(priority) || (priority as number) < OJS_PRIORITY_RANGE.min || (priority as number) > OJS_PRIORITY_RANGE.max)
  ) {
    issues.push({ path: 'options.priority', message: `must be an integer from ${OJS_PRIORITY_RANGE.min} to ${OJS_PRIORITY_RANGE.max}` });
  }
  const scheduledAt = options.delay_until ?? options.scheduled_at;
  const relative: RelativeTimes = {};
  const scheduledIn = relativeMs(scheduledAt);
  if (scheduledIn !== null) relative.scheduledAtMs = scheduledIn;
  else if (scheduledAt !== undefined && !isDateTime(scheduledAt)) {
    issues.push({
      path: options.delay_until !== undefined ? 'options.delay_until' : 'options.scheduled_at',
      message: TIME_MESSAGE,
    });
  }
  const expiresIn = relativeMs(options.expires_at);
  if (expiresIn !== null) relative.expiresAtMs = expiresIn;
  else if (options.expires_at !== undefined && options.expires_at !== null && !isDateTime(options.expires_at)) {
    issues.push({ path: 'options.expires_at', message: TIME_MESSAGE });
  }
  const rateLimit = readRateLimit(options.rate_limit, issues);
  if (options.pending !== undefined && typeof options.pending !== 'boolean')
    issues.push({ path: 'options.pending', message: 'must be a boolean' });
  for (const field of ['timeout_ms', 'visibility_timeout_ms'] as const) {
    const value = options[field];
    if (value !== undefined && (!Number.isInteger(value) || (value as number) <= 0))
      issues.push({ path: `options.${field}`, message: 'must be a positive integer' });
  }
  const retry = readRetryOptions(options.retry, issues);

  let policy: unknown = null;
  let policyPath: ParsedPush['policyPath'] = null;
  if (options.unique !== undefined && options.unique !== null) {
    policyPath = 'options.unique';
    policy = readPolicy(options.unique, policyPath, issues);
    if (body.unique !== undefined && body.unique !== null)
      issues.push({ path: 'unique', message: 'give the policy once: options.unique or unique' });
  } else if (body.unique !== undefined && body.unique !== null) {
    policyPath = 'unique';
    policy = readPolicy(body.unique, policyPath, issues);
  }

  if (issues.length > 0) throw new InvalidJobInputError(prefixed(issues, at));

  const envelope: Record<string, JsonValue> = {};
  for (const [field, value] of Object.entries(body)) {
    if (!KNOWN_FIELDS.has(field) && !SERVER_FIELDS.has(field)) envelope[field] = value as JsonValue;
  }
  for (const [field, value] of Object.entries(options)) if (!STORED_OPTIONS.has(field)) envelope[field] = value as JsonValue;

  const input: GatewayJobInput = {
    type: type as string,
    args: argsToPayload(args as JsonValue[]),
    extras: { envelope },
  };
  if (retry.policy) input.extras.retry = retry.policy;
  if (id !== undefined) input.id = id as string;
  if (meta !== undefined) input.meta = meta as Record<string, unknown>;
  if (queue !== undefined) input.queue = queue as string;
  if (priority !== undefined) input.priority = priority as number;
  if (scheduledAt !== undefined && scheduledIn === null) input.scheduled_at = scheduledAt as string;
  if (retry.maxAttempts !== undefined) input.max_attempts = retry.maxAttempts;
  if (options.pending === true) input.pending = true;
  if (policy !== null) input.unique = policy as GatewayJobInput['unique'];
  return { input, policyPath, relative: Object.keys(relative).length > 0 ? relative : null, rateLimit };
}

const TIME_MESSAGE = 'must be an RFC 3339 date-time, or "+" and an ISO 8601 duration (now plus it, e.g. "+PT5S")';

function isDateTime(value: unknown): boolean {
  return typeof value === 'string' && RFC3339.test(value) && !Number.isNaN(Date.parse(value));
}

function prefixed(issues: ValidationIssue[], at: string): ValidationIssue[] {
  return at ? issues.map((issue) => ({ ...issue, path: `${at}.${issue.path}` })) : issues;
}
