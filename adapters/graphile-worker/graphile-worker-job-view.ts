/**
 * The job views of the Graphile adapter, one home: a ledger row joined with Graphile's job (a
 * candidate as lock-and-read reports it, or get-job's row) and a just-inserted job, as the OJS
 * envelope, through the core's `buildJobView`.
 */
import type { JsonValue, OjsJob } from '../../src/job.js';
import type { OjsJobState } from '../../src/job-state.js';
import { buildJobView, newJobState } from '../../src/job-view.js';
import type { UniquePolicy } from '../../src/unique-policy.js';
import { DEFAULT_QUEUE } from '../../src/uniqueness-key.js';
import type { PgClientLike } from './graphile-worker-pg.js';
import type { PreparedGraphileEnqueue } from './graphile-worker-request.js';
import type { GraphileWorkerSql } from './graphile-worker-sql.js';

/** A candidate as lock_and_read reports it (functions/candidates.sql). */
export interface CandidateRow {
  job_id: string;
  id: string;
  state: OjsJobState;
  created_at: number;
  scheduled_at: number;
  /** x_period_anchor "last_duplicate": the last duplicate attempt (ms), null if none. */
  last_duplicate_at: number | null;
  /** A replace took the key from this record (the key's head keeps it, marked): ConflictCandidate.superseded. */
  superseded: boolean;
  view: Omit<JobRow, 'job_id' | 'id' | 'state'>;
}

export interface InsertedRow {
  job_id: string;
  id: string;
  /** An ISO string: insert_job returns JSON. */
  created_at: Date | string;
  scheduled_at: Date | string;
  max_attempts: number;
}

/**
 * When a finished candidate finished (epoch ms), for `x_period_anchor: "finished_at"`; null for a
 * live one. The ledger's `finished_at` (the completion trigger's label, a cancel's time) when it
 * has one; a job that failed for good is kept by Graphile in its table with no such time, so it
 * is derived from the row as Graphile's fail left it: `run_at = greatest(now(), run_at) +
 * exp(least(attempts, 10)) s`, and `now()` there is the failure (the row was due before it ran).
 * graphile-worker-host.ts checks that formula (GRAPHILE_FAIL_BACKOFF).
 */
export function candidateFinishedAt(candidate: CandidateRow): number | null {
  if (candidate.state !== 'completed' && candidate.state !== 'discarded' && candidate.state !== 'cancelled') return null;
  const finished = candidate.view.completed_at;
  if (finished !== null) return new Date(finished).getTime();
  if (candidate.state !== 'discarded') return null;
  return candidate.scheduled_at - Math.round(Math.exp(Math.min(candidate.view.attempt, 10)) * 1000);
}

export function candidateView(candidate: CandidateRow): OjsJob {
  return toOjsJob({ ...candidate.view, job_id: candidate.job_id, id: candidate.id, state: candidate.state });
}

export function createdView(request: PreparedGraphileEnqueue, row: InsertedRow): OjsJob {
  const { job, prepared } = request;
  return buildJobView({
    id: row.id,
    type: job.type,
    queue: job.queue ?? DEFAULT_QUEUE,
    args: request.args,
    meta: request.meta,
    // Graphile's run_at defaults to the transaction's now(), created_at is the later
    // clock_timestamp(): a job due now reads available, as getJob would say.
    state: newJobState(row.created_at, row.scheduled_at),
    attempt: 0,
    max_attempts: row.max_attempts,
    priority: job.priority ?? 0,
    created_at: row.created_at,
    scheduled_at: row.scheduled_at,
    unique: prepared?.policy ?? null,
    uniqueness_key: prepared?.key ?? null,
  });
}

/** A live candidate a replace has just cancelled, at `finishedAt`, in favour of job `replacedBy`. */
export function replacedView(candidate: CandidateRow, finishedAt: string, replacedBy: string): OjsJob {
  return toOjsJob({
    ...candidate.view,
    job_id: candidate.job_id,
    id: candidate.id,
    state: 'cancelled',
    completed_at: finishedAt,
    replaced_by: replacedBy,
  });
}

interface JobRow {
  job_id: string;
  id: string;
  type: string;
  queue: string;
  args: JsonValue | null;
  meta: Record<string, JsonValue>;
  policy: UniquePolicy | null;
  fingerprint: string | null;
  state: OjsJobState;
  attempt: number;
  max_attempts: number;
  priority: number;
  /** Dates from a query's row; ISO strings inside lock_and_read's JSON. */
  created_at: Date | string;
  scheduled_at: Date | string;
  completed_at: Date | string | null;
  replaced_by: string | null;
  /** Duplicate counts: get-job's (duplicate_counts); a candidate's view leaves them out. */
  duplicate_count?: number | null;
  last_duplicate_at?: Date | string | null;
}

/** OJS INFO for a job the adapter enqueued, or null. */
export async function readJob(client: PgClientLike, sql: GraphileWorkerSql, ojsId: string): Promise<OjsJob | null> {
  const { rows } = await client.query<JobRow>(sql.text('get-job'), [ojsId]);
  return rows[0] ? toOjsJob(rows[0]) : null;
}

function toOjsJob(row: JobRow): OjsJob {
  return buildJobView({
    ...row,
    // Graphile deletes a job's row (and payload) when it completes or is cancelled; the ledger
    // does not keep a second copy of every payload, so a finished job's args read as null.
    args: row.args,
    unique: row.policy,
    uniqueness_key: row.fingerprint,
  });
}
