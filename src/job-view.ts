/**
 * The OJS envelope of a job (`OjsJob`), built from what a store holds, in one place: every
 * backend's `getJob`, enqueue outcomes and lookups, and the gateway, read a job through
 * {@link buildJobView}, so the same job reads the same on every host: times as ISO 8601 UTC,
 * `completed_at` only once the job is finished, `replaced_by` only on a replaced job,
 * `duplicate_count` and `last_duplicate_at` only once a duplicate was counted on the job.
 */
import type { OjsJob } from './job.js';
import { TERMINAL_STATES } from './job-state.js';

/** A time as the stores hold it: ms since the epoch, a `Date`, or a string `Date` parses (ISO 8601, PostgreSQL's JSON). */
export type StoredTime = number | Date | string;

/** A job's fields as a store read them; the times in whichever form the store keeps. */
export interface JobViewSource extends Omit<
  OjsJob,
  'created_at' | 'scheduled_at' | 'completed_at' | 'replaced_by' | 'duplicate_count' | 'last_duplicate_at'
> {
  created_at: StoredTime;
  scheduled_at: StoredTime;
  /** When the job finished; ignored unless its state is terminal (a retried job keeps an old one on some hosts). */
  completed_at?: StoredTime | null;
  /** The job that replaced this one; null or absent for none. */
  replaced_by?: string | null;
  /** Duplicate adds counted on the job; 0, null or absent for none. */
  duplicate_count?: number | null;
  /** When the last counted duplicate met the job; read only with a `duplicate_count`. */
  last_duplicate_at?: StoredTime | null;
}

export function buildJobView(source: JobViewSource): OjsJob {
  const view: OjsJob = {
    id: source.id,
    type: source.type,
    queue: source.queue,
    args: source.args,
    meta: source.meta,
    state: source.state,
    attempt: source.attempt,
    max_attempts: source.max_attempts,
    priority: source.priority,
    created_at: isoTime(source.created_at),
    scheduled_at: isoTime(source.scheduled_at),
    unique: source.unique,
    uniqueness_key: source.uniqueness_key,
  };
  if (source.completed_at != null && TERMINAL_STATES.includes(source.state)) view.completed_at = isoTime(source.completed_at);
  if (source.replaced_by != null) view.replaced_by = source.replaced_by;
  if (source.duplicate_count != null && source.duplicate_count > 0 && source.last_duplicate_at != null) {
    view.duplicate_count = source.duplicate_count;
    view.last_duplicate_at = isoTime(source.last_duplicate_at);
  }
  return view;
}

/**
 * The state of a job just written: `scheduled` when it is due after the moment it was created,
 * `available` otherwise (a job due now, or one whose run time the host set to the write's own
 * clock reading, reads available, as `getJob` would say).
 */
export function newJobState(createdAt: StoredTime, scheduledAt: StoredTime): 'scheduled' | 'available' {
  return timeMs(scheduledAt) > timeMs(createdAt) ? 'scheduled' : 'available';
}

function timeMs(time: StoredTime): number {
  return typeof time === 'number' ? time : new Date(time).getTime();
}

function isoTime(time: StoredTime): string {
  return (time instanceof Date ? time : new Date(time)).toISOString();
}
