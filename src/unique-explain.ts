/**
 * Explain (issue: "see and steer deduplication"): what an add of a job would do now, and why,
 * from what the store holds under its key, the same on every backend. Each backend reads the
 * key's jobs (writing nothing) and hands them here; the answer is decided by the same
 * {@link decideUniqueConflict} every enqueue uses, so it cannot drift from what an add does.
 *
 * The explanation carries the key, its pre-image and (through the jobs' ids) what the store
 * holds: it is for a person who asked about their own job, never for a log or an error (§12).
 */
import {
  decideUniqueConflict,
  insertionOrder,
  isDuplicate,
  isSuperseded,
  periodAnchor,
  type ConflictCandidate,
} from './conflict-decision.js';
import type { OjsJobState } from './job-state.js';
import { parsePeriod, periodEndOrInfinity } from './period.js';
import type { UniquePolicy, UpdateField } from './unique-policy.js';

/** The outcome an add would have now: an `EnqueueResult`'s, or `rejected` (a `DuplicateJobError`). */
export type ExplainOutcome = 'created' | 'deduplicated' | 'rejected' | 'replaced' | 'updated';

/** Why a job found under the key does not count for the policy. */
export type NotCountedReason = 'state' | 'window_closed' | 'superseded';

/** One job found under the key. */
export interface ExplainedJob {
  id: string;
  /** The job's queue, where the backend records one per job (BullMQ's shared indexes). */
  queue?: string;
  state: OjsJobState;
  /** ISO 8601, the backend's clock. */
  created_at: string;
  /**
   * When the policy's window over this job closes (ISO 8601): from then on it no longer counts.
   * Null when the policy has no period (it counts while its state does) or the end is past every date.
   */
  window_end: string | null;
  /** Whether the policy counts it as a duplicate now (§7.4). */
  counted: boolean;
  /** Why it does not count, when it does not. */
  not_counted?: NotCountedReason;
}

/** The answer of every backend's `explainUnique`. */
export interface UniqueExplanation {
  /** The uniqueness key (§4). */
  uniqueness_key: string;
  /** The RFC 8785 pre-image it hashes. */
  canonical: string;
  /** The parsed policy (defaults filled in). */
  policy: UniquePolicy;
  /** The backend's clock when it read the jobs (ISO 8601): windows are measured against it. */
  now: string;
  /** Every job the backend found under the key, oldest first. */
  jobs: ExplainedJob[];
  /** What an add of the job would do now. */
  outcome: ExplainOutcome;
  /** The job the add would meet (deduplicated to, rejected by, replacing, updating); null for `created`. */
  existing_job_id: string | null;
  /** For `rejected`: a plain duplicate, or `replace` meeting an active job it may not cancel (§5.2). */
  reason?: 'duplicate' | 'active_not_replaceable';
  /** For `replaced`: every job the add would take the key from, oldest first. */
  replaces?: string[];
  /** For `updated`: the fields the add would copy onto the existing job. */
  update_fields?: UpdateField[];
  /**
   * `x_successor`: true when the existing job is active, so the add would be kept as the key's
   * pending successor (replacing any earlier one), to run once the existing job finishes.
   */
  successor?: true;
}

/** A job as a backend read it for an explanation: a conflict candidate, with its queue where known. */
export interface ExplainCandidate extends ConflictCandidate {
  queue?: string;
}

export interface ExplainInput {
  /** The prepared job (`prepareUnique`): its key, pre-image and policy. */
  prepared: { key: string; canonical: string; policy: UniquePolicy };
  /** Epoch ms on the backend's clock, when it read the jobs. */
  now: number;
  /** Every job the backend holds under the key, in any state and order. */
  candidates: readonly ExplainCandidate[];
  /** The backend's `capabilities.unique_jobs.replace_active`. */
  canReplaceActive: boolean;
}

/** Builds the explanation from what a backend read. Pure. */
export function explainUniqueAdd(input: ExplainInput): UniqueExplanation {
  const { prepared, now, canReplaceActive } = input;
  const { policy, key } = prepared;
  const decision = decideUniqueConflict({ policy, uniquenessKey: key, now, candidates: input.candidates, canReplaceActive });
  const period = policy.period === null ? null : parsePeriod(policy.period);
  const jobs = [...input.candidates].sort(insertionOrder).map((candidate): ExplainedJob => {
    const end = period === null ? Number.POSITIVE_INFINITY : periodEndOrInfinity(periodAnchor(candidate, policy), period);
    const counted = isDuplicate(candidate, policy, now);
    const job: ExplainedJob = {
      id: candidate.id,
      ...(candidate.queue !== undefined ? { queue: candidate.queue } : {}),
      state: candidate.state,
      created_at: new Date(candidate.created_at).toISOString(),
      window_end: Number.isFinite(end) ? new Date(end).toISOString() : null,
      counted,
    };
    if (!counted) {
      job.not_counted = !policy.states.includes(candidate.state) ? 'state' : isSuperseded(candidate) ? 'superseded' : 'window_closed';
    }
    return job;
  });
  const base = { uniqueness_key: key, canonical: prepared.canonical, policy, now: new Date(now).toISOString(), jobs };
  switch (decision.action) {
    case 'insert':
      return { ...base, outcome: 'created', existing_job_id: null };
    case 'ignore':
      return { ...base, outcome: 'deduplicated', existing_job_id: decision.existing.id };
    case 'reject':
      return { ...base, outcome: 'rejected', existing_job_id: decision.existing.id, reason: decision.error.reason };
    case 'replace':
      return { ...base, outcome: 'replaced', existing_job_id: decision.existing.id, replaces: decision.supersede.map((c) => c.id) };
    case 'update':
      return { ...base, outcome: 'updated', existing_job_id: decision.existing.id, update_fields: decision.fields };
    case 'successor':
      return { ...base, outcome: 'deduplicated', existing_job_id: decision.existing.id, successor: true };
  }
}
