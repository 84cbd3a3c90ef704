/**
 * How long the records a policy depends on must live.
 *
 * removeOnComplete / removeOnFail: BullMQ deletes a finished job inside the script that finishes
 * it, so a policy whose `states` include `completed` (or `discarded`) would silently stop
 * matching once the job is gone. Rejected alternatives: a tombstone written on the `completed`
 * event (best effort: the events stream is trimmed and a listener can lag or be down), and
 * wrapping BullMQ's finishing script (a fork of its most intricate script). Chosen: such an add
 * is refused at enqueue with `InvalidUniquePolicyError` unless the job's own keep option keeps
 * it at least for the policy's period (`removeOnComplete: { age: <seconds ≥ period> }` without
 * `count`, `false`, or unset). In BullMQ 6 the option is per job (set on the job or the queue's
 * default job options), so the check sees the value that will apply.
 */
import type { JobsOptions, KeepJobs } from 'bullmq';
import type { ValidationIssue } from '../../src/errors.js';
import type { UniquePolicy } from '../../src/unique-policy.js';
import { periodArgs } from './bullmq-period-args.js';

function periodUpperBoundMs(policy: UniquePolicy): number | null {
  return periodArgs(policy)?.upperBoundMs ?? null;
}

/** Problems with `removeOnComplete`/`removeOnFail` for this policy (empty when the records live long enough). */
export function retentionIssues(policy: UniquePolicy, opts: Pick<JobsOptions, 'removeOnComplete' | 'removeOnFail'>): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const bound = periodUpperBoundMs(policy);
  const check = (state: 'completed' | 'discarded', option: 'removeOnComplete' | 'removeOnFail') => {
    if (!policy.states.includes(state)) return;
    const value = opts[option] as boolean | number | KeepJobs | undefined;
    if (value === undefined || value === false) return;
    const keep = typeof value === 'object' ? (value as { age?: number; count?: number }) : undefined;
    const keepsLongEnough = keep !== undefined && keep.count === undefined && keep.age !== undefined && bound !== null && keep.age * 1000 >= bound;
    if (!keepsLongEnough) {
      issues.push({
        path: `opts.${option}`,
        message:
          `the policy's states include "${state}", but ${option} would delete the finished job before ` +
          (bound === null ? 'forever (the policy has no period)' : `its period ends`) +
          `; use ${option}: false` + (bound === null ? '' : ` or { age: ${Math.ceil(bound / 1000)} } (seconds)`),
      });
    }
  };
  check('completed', 'removeOnComplete');
  check('discarded', 'removeOnFail');
  return issues;
}
