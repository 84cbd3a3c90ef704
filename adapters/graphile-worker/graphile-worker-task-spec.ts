/**
 * Graphile's `addJob(identifier, payload, spec)` as an OJS job, in one table (docs/graphile-worker.md):
 *
 * | Graphile                 | OJS                                   |
 * |--------------------------|---------------------------------------|
 * | task identifier          | `type`                                |
 * | payload                  | `args`                                |
 * | `spec.runAt`             | `scheduled_at`                        |
 * | `spec.maxAttempts`       | `max_attempts`                        |
 * | `spec.priority` (asc)    | `priority` = −priority (OJS: desc)    |
 * | `spec.meta` (adapter)    | `meta` (kept in the ledger)           |
 * | `spec.queue` (adapter)   | `queue` (kept in the ledger; default `"default"`) |
 * | `spec.queueName`         | not an OJS field: passed to Graphile unchanged |
 * | `spec.flags`             | not an OJS field: passed to Graphile unchanged |
 *
 * OJS `queue` is deliberately not Graphile's `queueName`: a Graphile named queue runs its jobs
 * one at a time, so deriving one from the `queue` dimension would serialise a user's jobs by
 * surprise. A user who wants both sets both.
 */
import type { TaskSpec } from 'graphile-worker';
import { entryPointPolicy, NO_ENTRY_POINT_POLICIES, type EntryPointPolicies } from '../../src/registered-policies.js';
import { InvalidJobInputError, type ValidationIssue } from '../../src/errors.js';
import type { JobInput } from '../../src/job.js';
import type { UniquePolicyInput } from '../../src/unique-policy.js';
import { TIME_RANGE_MS } from '../../src/input-limits.js';
import { prepareGraphileEnqueue, type PreparedGraphileEnqueue } from './graphile-worker-request.js';

/** Graphile Worker stores priority and max_attempts as smallint. */
const SMALLINT = { min: -32768, max: 32767 } as const;

/** A task identifier: a name declared in `GraphileWorker.Tasks`, or any other string (as in Graphile). */
export type TaskIdentifier = keyof GraphileWorker.Tasks | (string & {});

/** The payload of `TIdentifier`: its `GraphileWorker.Tasks` entry, else `unknown` (as in Graphile). */
export type TaskPayload<TIdentifier extends TaskIdentifier> = TIdentifier extends keyof GraphileWorker.Tasks
  ? GraphileWorker.Tasks[TIdentifier]
  : unknown;

/** Graphile's `TaskSpec` plus the OJS fields. */
export interface UniqueTaskSpec extends TaskSpec {
  /**
   * The OJS uniqueness policy (spec §2), validated before anything is written. Cannot be
   * combined with `jobKey` (see docs/graphile-worker.md, "unique and jobKey"). `null` is none.
   */
  unique?: UniquePolicyInput | null;
  /** OJS `queue`, for the `queue` uniqueness dimension. Not Graphile's `queueName`. (Default: `"default"`.) */
  queue?: string;
  /** OJS `meta`, for the `meta` dimension; stored in the ledger, not in the payload. (Default: `{}`.) */
  meta?: Record<string, unknown>;
  /** A caller-chosen OJS job id. (Default: Graphile's job id, as a string.) */
  id?: string;
}

/** A spec with an OJS policy: its add resolves to an `EnqueueResult`. */
export type UniqueTaskSpecWithPolicy = UniqueTaskSpec & { unique: UniquePolicyInput };

/** A spec without a policy (`unique` absent or null): its add is Graphile's own and resolves to a `Job`. */
export type PlainTaskSpec = TaskSpec & { unique?: null };

/**
 * Whether a spec asks for uniqueness: an own `unique` that is neither undefined nor null
 * (`unique: null` is no policy, on every entry point; an inherited property is not input).
 */
export function hasUniquePolicy(spec: unknown): boolean {
  if (spec === null || typeof spec !== 'object' || !Object.prototype.hasOwnProperty.call(spec, 'unique')) return false;
  const unique = (spec as { unique?: unknown }).unique;
  return unique !== undefined && unique !== null;
}

/**
 * The OJS `args` of a Graphile payload, on every unique entry point (`addJob`, `addJobs`,
 * `addJobWithClient`, task helpers): a missing payload is Graphile's default, `{}`; anything
 * else, `null` included, is stored exactly as given and hashed as stored, so a job has the same
 * key as through `createGraphileWorkerBackend` and every other backend.
 */
export function payloadArgs(payload: unknown): unknown {
  return payload === undefined ? {} : payload;
}

/**
 * Problems with the Graphile-specific options of a unique spec (the OJS fields are the core's),
 * each naming the option under `prefix` (`spec.flags`, `[2].runAt`). Checked before any I/O.
 */
export function taskSpecIssues(spec: unknown, prefix: string): ValidationIssue[] {
  if (spec === null || typeof spec !== 'object' || Array.isArray(spec)) return [{ path: prefix, message: 'must be an object' }];
  const issues: ValidationIssue[] = [];
  const own = (name: string): unknown =>
    Object.prototype.hasOwnProperty.call(spec, name) ? (spec as Record<string, unknown>)[name] : undefined;
  const at = (name: string) => `${prefix}.${name}`;
  const flags = own('flags');
  if (flags !== undefined && flags !== null) {
    if (!Array.isArray(flags) || flags.some((flag) => typeof flag !== 'string' || flag.includes('\u0000'))) {
      issues.push({ path: at('flags'), message: 'must be an array of strings without NUL characters' });
    }
  }
  const queueName = own('queueName');
  if (queueName !== undefined && queueName !== null && (typeof queueName !== 'string' || queueName.includes('\u0000'))) {
    issues.push({ path: at('queueName'), message: 'must be a string without NUL characters' });
  }
  const runAt = own('runAt');
  if (runAt !== undefined && runAt !== null) {
    const ms = runAt instanceof Date ? runAt.getTime() : Number.NaN;
    if (!(ms >= TIME_RANGE_MS.min && ms <= TIME_RANGE_MS.max)) {
      issues.push({
        path: at('runAt'),
        message: 'must be a valid Date between years 1 and 9999 (what PostgreSQL accepts from the adapter)',
      });
    }
  }
  for (const [name, min] of [
    ['priority', SMALLINT.min],
    ['maxAttempts', 1],
  ] as const) {
    const value = own(name);
    if (
      value !== undefined &&
      value !== null &&
      !(Number.isInteger(value) && (value as number) >= min && (value as number) <= SMALLINT.max)
    ) {
      issues.push({
        path: at(name),
        message: `must be an integer from ${min} to ${SMALLINT.max} (Graphile Worker stores it as a smallint)`,
      });
    }
  }
  // Two deduplicators on one job give outcomes neither can report: Graphile's replace updates
  // an existing row in place (same id, the ledger's record of another key silently changes
  // job) and its key race can drop the job (#580), which would break §8.1. Refused, not merged.
  for (const name of ['jobKey', 'jobKeyMode']) {
    const value = own(name);
    if (value !== undefined && value !== null) {
      issues.push({ path: at(name), message: 'cannot be combined with unique: use unique alone (OJS) or jobKey alone (Graphile)' });
    }
  }
  return issues;
}

/**
 * A unique spec as the enqueue's input, validated before any I/O (Graphile's options here, the
 * OJS fields and the policy by the core). `prefix` names the spec in errors.
 */
export function taskSpecToEnqueue(identifier: string, payload: unknown, spec: UniqueTaskSpec, prefix = 'spec'): PreparedGraphileEnqueue {
  const issues = taskSpecIssues(spec, prefix);
  if (issues.length > 0) throw new InvalidJobInputError(issues);
  // Own properties only, as the core reads a job and a policy: an inherited field is not input.
  const own = <K extends keyof UniqueTaskSpec>(name: K): UniqueTaskSpec[K] | undefined =>
    Object.prototype.hasOwnProperty.call(spec, name) ? spec[name] : undefined;
  const job: JobInput = {
    type: identifier,
    args: payloadArgs(payload),
    unique: own('unique'),
  };
  const [queue, meta, id, runAt, maxAttempts, priority] = [
    own('queue'),
    own('meta'),
    own('id'),
    own('runAt'),
    own('maxAttempts'),
    own('priority'),
  ];
  if (queue !== undefined) job.queue = queue;
  if (meta !== undefined) job.meta = meta;
  if (id !== undefined) job.id = id;
  if (runAt !== undefined && runAt !== null) job.scheduled_at = runAt;
  if (maxAttempts !== undefined && maxAttempts !== null) job.max_attempts = maxAttempts;
  if (priority) job.priority = -priority;
  return prepareGraphileEnqueue(job, {
    queueName: own('queueName') ?? null,
    priority: priority ?? null,
    flags: own('flags') ?? null,
  });
}

/**
 * `spec` with the policy the entry point applies to an add of `identifier` (its registered
 * policy, its `reportOnly`: src/registered-policies.ts); `spec` itself when nothing applies.
 * @throws InvalidJobInputError at `<prefix>.unique` for a `unique` that differs from the registered policy.
 */
export function withEntryPointPolicy<T extends UniqueTaskSpec | undefined>(
  policies: EntryPointPolicies,
  identifier: string,
  spec: T,
  prefix = 'spec',
): T | UniqueTaskSpec {
  if (policies === NO_ENTRY_POINT_POLICIES) return spec;
  const given = spec !== undefined && spec !== null && Object.prototype.hasOwnProperty.call(spec, 'unique') ? spec.unique : undefined;
  const unique = entryPointPolicy(policies, identifier, given, `${prefix}.unique`);
  return unique === given ? spec : { ...spec, unique };
}
