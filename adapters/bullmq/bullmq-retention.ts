/**
 * How long the records a policy depends on must live.
 *
 * removeOnComplete / removeOnFail: BullMQ deletes a finished job inside the script that finishes
 * it, so a policy whose `states` include `completed` (or `discarded`) would silently stop
 * matching once the job is gone. Rejected alternatives: a tombstone written on the `completed`
 * event (best effort: the events stream is trimmed and a listener can lag or be down), and
 * wrapping BullMQ's finishing script (a fork of its most intricate script). Chosen: such an add
 * is refused at enqueue with `InvalidJobInputError` unless the job's own keep option keeps
 * it at least for the policy's period (`removeOnComplete: { age: <seconds ≥ period> }` without
 * `count`, `false`, or unset).
 *
 * Unset is not the end of it: a Worker's own `removeOnComplete`/`removeOnFail` applies to every
 * job that has none (bullmq classes/redis-queue-backend.js `getKeepJobs`: the job's option wins
 * when set, the worker's otherwise). So such an add also stores an explicit `false` on the job
 * when the caller gave none (`keepOptionsFor`): the worker's setting then cannot delete it when it
 * finishes. `false` rather than `{ age }`: an age or a count makes BullMQ trim the WHOLE
 * completed/failed set when the job finishes, deleting other jobs, other policies' too.
 * What no per-job option can stop: a count or age set for OTHER jobs (a Worker's default applied
 * to plain jobs, say) trims the whole set when those finish, this job included (docs/bullmq.md).
 */
import type { JobsOptions, KeepJobs } from 'bullmq';
import type { ValidationIssue } from '../../src/errors.js';
import type { UniquePolicy } from '../../src/unique-policy.js';
import { periodArgs } from './bullmq-period-args.js';

/** How long the archive of a job a `replace` cancelled stays readable, when its own policy needs it no longer: 7 days. */
export const DEFAULT_CANCELLED_RETENTION_MS = 7 * 86_400_000;

function periodUpperBoundMs(policy: UniquePolicy): number | null {
  return periodArgs(policy)?.upperBoundMs ?? null;
}

/** Problems with `removeOnComplete`/`removeOnFail` for this policy (empty when the records live long enough). */
export function retentionIssues(policy: UniquePolicy, opts: Pick<JobsOptions, 'removeOnComplete' | 'removeOnFail'>): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  // Most policies count no finished state: nothing to check.
  if (!policy.states.includes('completed') && !policy.states.includes('discarded')) return issues;
  const bound = periodUpperBoundMs(policy);
  const check = (state: 'completed' | 'discarded', option: 'removeOnComplete' | 'removeOnFail') => {
    if (!policy.states.includes(state)) return;
    const value = opts[option] as boolean | number | KeepJobs | undefined;
    if (value === undefined || value === false) return;
    const keep = typeof value === 'object' ? (value as { age?: number; count?: number }) : undefined;
    const keepsLongEnough =
      keep !== undefined && keep.count === undefined && keep.age !== undefined && bound !== null && keep.age * 1000 >= bound;
    if (!keepsLongEnough) {
      issues.push({
        path: `opts.${option}`,
        message:
          `the policy's states include "${state}", but ${option} would delete the finished job before ` +
          (bound === null ? 'forever (the policy has no period)' : `its period ends`) +
          `; use ${option}: false` +
          (bound === null ? '' : ` or { age: ${Math.ceil(bound / 1000)} } (seconds)`),
      });
    }
  };
  check('completed', 'removeOnComplete');
  check('discarded', 'removeOnFail');
  return issues;
}

/**
 * The keep options to store on a unique job whose policy checks `completed` or `discarded` and
 * whose caller gave none: `false`, so that a Worker's `removeOnComplete`/`removeOnFail` cannot
 * apply to it (see the file comment). Empty when the policy does not need the record.
 */
export function keepOptionsFor(
  policy: UniquePolicy,
  opts: Pick<JobsOptions, 'removeOnComplete' | 'removeOnFail'>,
): Pick<JobsOptions, 'removeOnComplete' | 'removeOnFail'> {
  const keep: Pick<JobsOptions, 'removeOnComplete' | 'removeOnFail'> = {};
  if (policy.states.includes('completed') && opts.removeOnComplete === undefined) keep.removeOnComplete = false;
  if (policy.states.includes('discarded') && opts.removeOnFail === undefined) keep.removeOnFail = false;
  return keep;
}
