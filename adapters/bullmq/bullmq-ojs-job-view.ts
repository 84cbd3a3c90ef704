/**
 * A BullMQ job hash (or a cancelled job's archive) as the OJS envelope (`OjsJob`).
 *
 * Priority: OJS runs higher first, BullMQ runs lower first (1 is the highest, 0 means none, and
 * BullMQ serves its `wait` list, the jobs without one, before any prioritized job). A job given
 * an OJS priority, 0 and negative ones included, is BullMQ `PRIORITY_BASE - p` (clamped to
 * 1..BULLMQ_MAX_PRIORITY), so that among such jobs higher runs first, 0 before −1 as well; a job
 * given none keeps BullMQ's own "no priority" (and reads back as OJS 0).
 */
import type { JsonValue, OjsJob, OjsJobState } from '../../src/job.js';
import { parseUniquePolicy } from '../../src/unique-policy.js';
import { BULLMQ_MAX_PRIORITY, jobOptsFromHash } from './bullmq-host.js';

export const PRIORITY_BASE = 1_000_000;

/** The BullMQ priority of an OJS one; `undefined` (none given) is BullMQ's none. */
export function bullmqPriority(ojsPriority: number | undefined): number | undefined {
  if (ojsPriority === undefined) return undefined;
  return Math.min(BULLMQ_MAX_PRIORITY, Math.max(1, PRIORITY_BASE - ojsPriority));
}

export function ojsJobView(queue: string, id: string, state: OjsJobState, hash: Record<string, string>, dueMs?: number): OjsJob {
  const opts = jobOptsFromHash(hash);
  const timestamp = Number(hash.timestamp ?? 0);
  const bullPriority = Number(hash.priority ?? 0);
  const view: OjsJob = {
    id,
    type: hash.name ?? '',
    queue,
    args: JSON.parse(hash.data ?? 'null') as JsonValue,
    meta: JSON.parse(hash.ojsMeta ?? '{}') as Record<string, JsonValue>,
    state,
    attempt: Number(hash.ats ?? hash.atm ?? 0),
    max_attempts: opts.attempts && opts.attempts > 0 ? opts.attempts : 1,
    priority: bullPriority > 0 ? PRIORITY_BASE - bullPriority : 0,
    created_at: new Date(timestamp).toISOString(),
    scheduled_at: new Date(dueMs ?? timestamp + Number(hash.delay ?? 0)).toISOString(),
    // Stored compact (compactUniquePolicy); a full policy, as older versions stored it, parses to itself.
    unique: hash.ojsPolicy ? parseUniquePolicy(JSON.parse(hash.ojsPolicy)) : null,
    uniqueness_key: hash.ojsKey ?? null,
  };
  const finished = hash.ojsCancelledOn ?? hash.finishedOn;
  if ((state === 'completed' || state === 'discarded' || state === 'cancelled') && finished)
    view.completed_at = new Date(Number(finished)).toISOString();
  if (hash.ojsReplacedBy) view.replaced_by = hash.ojsReplacedBy;
  return view;
}
