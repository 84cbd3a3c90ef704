/**
 * The conflict decision of spec §5–§9, written once. Every backend observes the jobs recorded
 * under a uniqueness key (atomically, by its own means), calls {@link decideConflict} with what
 * it saw, and carries out the answer in the same atomic step. Nothing here does I/O or reads a
 * clock: `now` is the backend's clock (§7.2 forbids mixing producer clocks), passed in.
 */
import { DuplicateJobError } from './errors.js';
import { TERMINAL_STATES, type OjsJobState } from './job-state.js';
import { parsePeriod, periodEndOrInfinity } from './period.js';
import { UPDATE_FIELDS, type UniquePolicy, type UpdateField } from './unique-policy.js';

/** A job recorded under the same uniqueness key, as the backend observed it. */
export interface ConflictCandidate {
  id: string;
  state: OjsJobState;
  /** Epoch ms on the backend's clock. */
  created_at: number;
  /** Epoch ms the job is or was due; needed for `replace_except_schedule`. */
  scheduled_at?: number | null;
  /**
   * Insertion order among the jobs of this key (any increasing number: the memory backend's
   * sequence, Graphile's job id, Redis `TIME` in microseconds). It breaks ties on `created_at`,
   * which on a millisecond clock are common under load, so that every backend names the same job
   * as "the existing one". Comparing ids instead was rejected: UUIDv7 ids are random within a
   * millisecond and counter ids compare wrongly as text ("10" < "9").
   */
  seq?: number;
  /**
   * Epoch ms of the last enqueue that found this job a duplicate under a policy anchored at
   * `last_duplicate` (the `x_period_anchor` extension), or null/absent if none has. Only
   * backends that support the extension record it.
   */
  last_duplicate_at?: number | null;
  /**
   * Epoch ms the job finished (reached `completed`, `discarded` or `cancelled`), null/absent while
   * it is live: the anchor of `x_period_anchor: "finished_at"`. Only needed under that anchor.
   */
  finished_at?: number | null;
  /**
   * A replace took the key from this job (it named it in `supersede`). A superseded job that is
   * finished is never a duplicate again; one a host made live again (BullMQ's `job.retry()` of a
   * failed job) counts like any live job.
   */
  superseded?: boolean;
}

export interface ConflictInput {
  policy: UniquePolicy;
  uniquenessKey: string;
  /** Epoch ms on the backend's clock. */
  now: number;
  /** Every job the backend still knows under this key, in any state and any order. */
  candidates: readonly ConflictCandidate[];
  /**
   * Whether the backend can atomically cancel an `active` job (§5.2: only a strong backend may).
   * When false, `replace` meeting an active duplicate falls back to `reject`.
   */
  canReplaceActive: boolean;
}

export type ConflictDecision =
  /** No duplicate: insert the new job. */
  | { action: 'insert' }
  /**
   * §5.4: return `existing`, insert nothing. `touch` (only under `x_period_anchor:
   * "last_duplicate"`): record `now` as `last_duplicate_at` on each of these jobs, in the same
   * atomic step.
   */
  | { action: 'ignore'; existing: ConflictCandidate; touch?: ConflictCandidate[] }
  /** §5.1 (or §5.2's fallback for an active job): throw `error`, insert nothing (but `touch`, as for ignore). */
  | { action: 'reject'; existing: ConflictCandidate; error: DuplicateJobError; touch?: ConflictCandidate[] }
  /**
   * §5.2/§5.3: the new job takes the key from every job in `supersede` (all duplicates, oldest
   * first, `existing` first), atomically with its insert: a live one is cancelled (naming the new
   * job as `replaced_by`); a finished one (a policy counting a terminal state) is left exactly as
   * it is, since a terminal state is never left. None of them counts as a duplicate of the key
   * afterwards (the backend records that, see {@link isSuperseded}), so the work of a later add
   * never grows with the key's history. `scheduledAt` is the time to give the new job instead of
   * its own (replace_except_schedule on a scheduled job), or null to keep its own.
   */
  | { action: 'replace'; existing: ConflictCandidate; supersede: ConflictCandidate[]; scheduledAt: number | null };

/**
 * The `x_update` extension: copy `fields` of the new job onto `existing` in place (it keeps its
 * id), insert nothing, and answer `updated`; `touch` as for ignore.
 */
export interface UpdateDecision {
  action: 'update';
  existing: ConflictCandidate;
  fields: UpdateField[];
  touch?: ConflictCandidate[];
  /**
   * `x_max_wait` (with `scheduled_at` among `fields`): the latest due time the update may give
   * `existing`, epoch ms (its `created_at` + `x_max_wait`). The host gives it
   * min(the new job's scheduled_at, this). Absent: the new job's scheduled_at as it is.
   */
  scheduledAtLimit?: number;
}

/**
 * The `x_successor` extension: `existing` is active; insert nothing now, leave the new job as the
 * key's one pending successor (replacing any earlier one), created as a job once `existing`
 * finishes; answer `deduplicated` with `existing` and the successor's id. `touch` as for ignore.
 */
export interface SuccessorDecision {
  action: 'successor';
  existing: ConflictCandidate;
  touch?: ConflictCandidate[];
}

/** Every answer {@link decideUniqueConflict} gives: the spec's, plus the extensions'. */
export type UniqueConflictDecision = ConflictDecision | UpdateDecision | SuccessorDecision;

/**
 * §7.4: a candidate is a duplicate iff its state is one of `policy.states` AND
 * `now < created_at + period` (or there is no period).
 */
export function isDuplicate(candidate: ConflictCandidate, policy: UniquePolicy, now: number): boolean {
  if (!policy.states.includes(candidate.state)) return false;
  if (isSuperseded(candidate)) return false;
  // Under a finished_at anchor a job that has not finished has no window yet: it counts.
  if (policy.x_period_anchor === 'finished_at' && !TERMINAL_STATES.includes(candidate.state)) return true;
  // A window whose end no date can hold never closes (a period stored before the enqueue check
  // existed must not make every later enqueue of its key fail).
  return policy.period === null || now < periodEndOrInfinity(periodAnchor(candidate, policy), parsePeriod(policy.period));
}

/** Whether a replace took the key from this job and it is finished (see `ConflictCandidate.superseded`). */
export function isSuperseded(candidate: ConflictCandidate): boolean {
  return candidate.superseded === true && TERMINAL_STATES.includes(candidate.state);
}

/**
 * Where the candidate's window starts (epoch ms): its `created_at` (§7.2), or under the
 * `x_period_anchor` extension its scheduled time, its last duplicate attempt (its creation
 * until one happens), or when it finished (+Infinity for a live job, whose window has not
 * started; its creation for a finished one a host gave no finish time).
 */
export function periodAnchor(candidate: ConflictCandidate, policy: UniquePolicy): number {
  switch (policy.x_period_anchor) {
    case undefined:
      return candidate.created_at;
    case 'scheduled_at':
      return candidate.scheduled_at ?? candidate.created_at;
    case 'last_duplicate':
      return Math.max(candidate.created_at, candidate.last_duplicate_at ?? candidate.created_at);
    case 'finished_at':
      // A live job's window has not started: it ends after every date.
      if (!TERMINAL_STATES.includes(candidate.state)) return Number.POSITIVE_INFINITY;
      return candidate.finished_at ?? candidate.created_at;
  }
}

/**
 * Decides what an enqueue under `policy` does, given the jobs already recorded under its key.
 *
 * When several candidates are duplicates (possible when earlier jobs used narrower `states`),
 * the first inserted (by `created_at`, then `seq`, then id) is "the existing job" that `ignore`
 * returns and `reject` names; `replace` supersedes all of them (cancelling the live ones), so
 * the invariant of §8.1 holds afterwards: the new job is the only one the key counts.
 */
export function decideConflict(input: ConflictInput): ConflictDecision {
  const decision = decideUniqueConflict(input);
  if (decision.action === 'update' || decision.action === 'successor') {
    // Unreachable through prepareUnique, which refuses an extension unless the backend declares it.
    const field = decision.action === 'update' ? 'x_update' : 'x_successor';
    throw new Error(`ojs-unique: a policy with ${field} needs decideUniqueConflict (and a backend that declares the extension)`);
  }
  return decision;
}

/**
 * {@link decideConflict} with the policy extensions: `x_period_anchor` (through
 * {@link isDuplicate}), `touch` for `last_duplicate`, the `successor` answer of `x_successor` when
 * the existing job is active, and the `update` answer of `x_update` when the existing job's state
 * has an entry there (otherwise `on_conflict` decides, as usual).
 */
export function decideUniqueConflict(input: ConflictInput): UniqueConflictDecision {
  const { policy, now } = input;
  const duplicates = input.candidates.filter((candidate) => isDuplicate(candidate, policy, now)).sort(insertionOrder);
  const existing = duplicates[0];
  if (!existing) return { action: 'insert' };
  // Every duplicate this enqueue found moves its window's end (BullMQ's extend renews the key's TTL).
  const touch = policy.x_period_anchor === 'last_duplicate' ? { touch: duplicates } : {};

  // x_successor: a duplicate of a running job is kept to run after it, not dropped.
  if (policy.x_successor !== undefined && existing.state === 'active') return { action: 'successor', existing, ...touch };

  const update = policy.x_update?.[existing.state as keyof NonNullable<UniquePolicy['x_update']>];
  if (update !== undefined) {
    const fields = UPDATE_FIELDS.filter((field) => update.includes(field));
    // x_max_wait: a debounce never holds the job past its first add plus the cap.
    const limit =
      policy.x_max_wait !== undefined && fields.includes('scheduled_at')
        ? { scheduledAtLimit: periodEndOrInfinity(existing.created_at, parsePeriod(policy.x_max_wait)) }
        : {};
    return { action: 'update', existing, fields, ...touch, ...limit };
  }

  switch (policy.on_conflict) {
    case 'ignore':
      return { action: 'ignore', existing, ...touch };
    case 'reject':
      return { action: 'reject', existing, error: duplicateError(existing, input.uniquenessKey, 'duplicate'), ...touch };
    case 'replace':
    case 'replace_except_schedule': {
      const active = duplicates.find((candidate) => candidate.state === 'active');
      if (active && !input.canReplaceActive) {
        // §5.2: fall back to reject, with an error that says why. Nothing is cancelled, not even
        // the non-active duplicates: a replace is all or nothing.
        return {
          action: 'reject',
          existing: active,
          error: duplicateError(active, input.uniquenessKey, 'active_not_replaceable'),
          ...touch,
        };
      }
      // §5.3: the schedule is kept only from a job that is still waiting for it.
      const scheduled = policy.on_conflict === 'replace_except_schedule' ? duplicates.find((c) => c.state === 'scheduled') : undefined;
      return { action: 'replace', existing, supersede: duplicates, scheduledAt: scheduled?.scheduled_at ?? null };
    }
  }
}

/** Oldest first: `created_at`, then `seq` where both have one, then id. */
export function insertionOrder(a: ConflictCandidate, b: ConflictCandidate): number {
  if (a.created_at !== b.created_at) return a.created_at - b.created_at;
  if (a.seq !== undefined && b.seq !== undefined && a.seq !== b.seq) return a.seq - b.seq;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

function duplicateError(
  existing: ConflictCandidate,
  uniquenessKey: string,
  reason: 'duplicate' | 'active_not_replaceable',
): DuplicateJobError {
  return new DuplicateJobError({ existingJobId: existing.id, existingJobState: existing.state, uniquenessKey, reason });
}
