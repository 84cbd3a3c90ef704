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
import { InvalidUniquePolicyError } from '../../src/errors.js';
import type { JobInput } from '../../src/job.js';
import type { UniquePolicyInput } from '../../src/unique-policy.js';
import { prepareGraphileEnqueue, type PreparedGraphileEnqueue } from './graphile-worker-enqueue.js';

/** Graphile's `TaskSpec` plus the OJS fields. */
export interface UniqueTaskSpec extends TaskSpec {
  /**
   * The OJS uniqueness policy (spec §2), validated before anything is written. Cannot be
   * combined with `jobKey` (see docs/graphile-worker.md, "unique and jobKey").
   */
  unique?: UniquePolicyInput;
  /** OJS `queue`, for the `queue` uniqueness dimension. Not Graphile's `queueName`. (Default: `"default"`.) */
  queue?: string;
  /** OJS `meta`, for the `meta` dimension; stored in the ledger, not in the payload. (Default: `{}`.) */
  meta?: Record<string, unknown>;
  /** A caller-chosen OJS job id. (Default: Graphile's job id, as a string.) */
  id?: string;
}

export function taskSpecToEnqueue(identifier: string, payload: unknown, spec: UniqueTaskSpec): PreparedGraphileEnqueue {
  if (spec.jobKey !== undefined && spec.jobKey !== null && spec.unique !== undefined) {
    // Two deduplicators on one job give outcomes neither can report: Graphile's replace updates
    // an existing row in place (same id, the ledger's record of another key silently changes
    // job) and its key race can drop the job (#580), which would break §8.1. Refused, not merged.
    throw new InvalidUniquePolicyError([
      { path: 'jobKey', message: 'cannot be combined with unique: use unique alone (OJS) or jobKey alone (Graphile)' },
    ]);
  }
  const job: JobInput = {
    type: identifier,
    args: payload ?? {},
    unique: spec.unique,
  };
  if (spec.queue !== undefined) job.queue = spec.queue;
  if (spec.meta !== undefined) job.meta = spec.meta;
  if (spec.id !== undefined) job.id = spec.id;
  if (spec.runAt !== undefined) job.scheduled_at = spec.runAt;
  if (spec.maxAttempts !== undefined) job.max_attempts = spec.maxAttempts;
  if (spec.priority) job.priority = -spec.priority;
  return prepareGraphileEnqueue(job, {
    queueName: spec.queueName ?? null,
    priority: spec.priority ?? null,
    flags: spec.flags ?? null,
  });
}
