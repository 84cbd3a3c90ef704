/**
 * A BullMQ job hash (or a cancelled job's archive) as the OJS envelope (`OjsJob`).
 *
 * Priority: OJS runs higher first, BullMQ runs lower first (1 is the highest, 0 means none).
 * The backend maps OJS `p > 0` to BullMQ `PRIORITY_BASE - p` (clamped to 1) and back; OJS 0 and
 * negative priorities are BullMQ 0 (no priority) — BullMQ has no "below default".
 */
import type { JsonValue, OjsJob, OjsJobState } from '../../src/job.js';
import { parseUniquePolicy } from '../../src/unique-policy.js';
import { jobOptsFromHash } from './bullmq-host.js';

export const PRIORITY_BASE = 1_000_000;

export function bullmqPriority(ojsPriority: number): number | undefined {
  return ojsPriority > 0 ? Math.max(1, PRIORITY_BASE - ojsPriority) : undefined;
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
