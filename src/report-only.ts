/**
 * Report-only rollout (`x_report_only: true` on a policy): the add is decided as the policy would
 * decide it, counted (`ojs.unique.adds` with `ojs.unique.report_only`), and the answer carries
 * `wouldBe`, but the job is always inserted, as a plain add would insert it. A team watches what
 * a policy would drop before enforcing it.
 *
 * How a backend decides without enforcing: the add runs through its own unique path under a
 * **report-only key** (the policy's key hashed again with a fixed prefix) with `on_conflict:
 * "ignore"` and no `x_update`. No duplicate: the job is inserted holding the report-only key
 * (`wouldBe` absent: the policy would have created it too). A duplicate: `wouldBe` is what the
 * policy would have done with it (`deduplicated`, `rejected`, `replaced`, `updated`), and the
 * job is inserted as a plain job, holding no key. So report-only adds see one another (a steady
 * stream of duplicates reads `deduplicated`, not `created`), atomically on each backend, and
 * never the enforced key.
 *
 * When the policy is later enforced: the enforced key is not the report-only key, so jobs added
 * report-only never count as duplicates of enforced adds (and a report-only add never sees an
 * enforced job). The first enforced add of a key inserts even when a report-only job of that key
 * is still waiting: at most one extra job per key, once, at the switch. A `replace` reported
 * (`wouldBe: "replaced"`) cancels nothing: the job holding the report-only key keeps it.
 *
 * Pure: the backends do the I/O (memory-backend.ts, bullmq-report-only.ts, graphile-worker-report-only.ts).
 */
import { hash } from 'node:crypto';
import { InvalidJobInputError } from './errors.js';
import { REPORT_ONLY_FIELD } from './report-only-mark.js';
import type { OjsJobState } from './job-state.js';
import type { PreparedUnique } from './unique-enqueue.js';
import type { UniquePolicy, UniquePolicyInput, UpdateState } from './unique-policy.js';

/** What an enforced policy would have done with a report-only add that met a duplicate. */
export type WouldBe = 'deduplicated' | 'rejected' | 'replaced' | 'updated';

/** What a report-only add answers beside its outcome (`created`: it was inserted). */
export interface ReportOnlyAnswer {
  reportOnly: true;
  /** Absent when the policy would have inserted the job too. */
  wouldBe?: WouldBe;
  /** The job the policy would have met (absent with `wouldBe`). */
  existingJobId?: string;
  existingJobState?: OjsJobState;
}

const shadows = new WeakMap<object, object>();

/**
 * The add a backend runs for a report-only policy: the report-only key, the policy with `ignore`
 * and without `x_update` or `x_successor`. `shadowOf` names the real one (a backend does not count the shadow add).
 */
export function reportOnlyShadow(prepared: PreparedUnique): PreparedUnique & { shadowOf: PreparedUnique } {
  const { x_update: _update, x_successor: _successor, ...policy } = prepared.policy;
  const shadow: PreparedUnique & { shadowOf: PreparedUnique } = {
    policy: { ...policy, on_conflict: 'ignore' },
    key: reportOnlyKey(prepared.key),
    canonical: JSON.stringify({ [REPORT_ONLY_FIELD]: prepared.canonical }),
    shadowOf: prepared,
  };
  if (prepared.policyToken !== undefined) {
    let token = shadows.get(prepared.policyToken);
    if (token === undefined) shadows.set(prepared.policyToken, (token = Object.freeze({})));
    shadow.policyToken = token;
  }
  return shadow;
}

/** The report-only key of a policy's key. */
export function reportOnlyKey(key: string): string {
  return hash('sha256', `${REPORT_ONLY_FIELD}\n${key}`, 'hex');
}

/** Whether `prepared` is a report-only shadow add (not counted on its own). */
export function isReportOnlyShadow(prepared: object | null): boolean {
  return prepared !== null && (prepared as { shadowOf?: unknown }).shadowOf !== undefined;
}

/**
 * What `policy` would have done with a duplicate in `state` (one the report-only key found, so
 * one the policy counts): its `x_update` entry for that state, else its `on_conflict`; a
 * replace of an active job the backend cannot replace is a rejection (§5.2).
 */
export function wouldBeFor(policy: UniquePolicy, state: OjsJobState, canReplaceActive: boolean): WouldBe {
  if (policy.x_update?.[state as UpdateState] !== undefined) return 'updated';
  // x_successor: the active job is returned; the duplicate would have been kept as its successor.
  if (policy.x_successor !== undefined && state === 'active') return 'deduplicated';
  switch (policy.on_conflict) {
    case 'ignore':
      return 'deduplicated';
    case 'reject':
      return 'rejected';
    case 'replace':
    case 'replace_except_schedule':
      return state === 'active' && !canReplaceActive ? 'rejected' : 'replaced';
  }
}

/** The refusal of a report-only policy where a backend's all-or-nothing batch cannot carry it, naming the field. */
export function reportOnlyUnsupported(path: string, where: string): InvalidJobInputError {
  return new InvalidJobInputError([
    { path, message: `is not supported ${where}: an all-or-nothing batch cannot insert a job after deciding it (add it on its own)` },
  ]);
}
