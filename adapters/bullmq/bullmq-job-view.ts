/**
 * The job views, one home: a BullMQ job hash (or a cancelled job's archive) as the OJS envelope
 * (`OjsJob`, the backend's and the gateway's), and an add's reply as the BullMQ `Job` with its
 * outcome (`withUniqueness`'s, `jobForReply`; a batch entry not added, `notAdded`).
 *
 * Priority: OJS runs higher first, BullMQ runs lower first (1 is the highest, 0 means none, and
 * BullMQ serves its `wait` list, the jobs without one, before any prioritized job). A job given
 * an OJS priority, 0 and negative ones included, is BullMQ `PRIORITY_BASE - p` (clamped to
 * 1..BULLMQ_MAX_PRIORITY), so that among such jobs higher runs first, 0 before −1 as well; a job
 * given none keeps BullMQ's own "no priority" (and reads back as OJS 0).
 */
import type { Job, Queue } from 'bullmq';
import { isDuplicateJobError, type OjsUniqueError } from '../../src/errors.js';
import type { JsonValue, OjsJob } from '../../src/job.js';
import type { OjsJobState } from '../../src/job-state.js';
import { buildJobView } from '../../src/job-view.js';
import type { PreparedUnique } from '../../src/unique-enqueue.js';
import { parseUniquePolicy } from '../../src/unique-policy.js';
import type { UniqueAddReply } from './bullmq-enqueue.js';
import { BULLMQ_MAX_PRIORITY, jobFromHash, jobOptsFromHash } from './bullmq-host.js';
import type { AddOutcomeKind, UniqueJob, UniqueOutcome } from './bullmq-types.js';

export const PRIORITY_BASE = 1_000_000;

/** The BullMQ priority of an OJS one; `undefined` (none given) is BullMQ's none. */
export function bullmqPriority(ojsPriority: number | undefined): number | undefined {
  if (ojsPriority === undefined) return undefined;
  return Math.min(BULLMQ_MAX_PRIORITY, Math.max(1, PRIORITY_BASE - ojsPriority));
}

/** x_successor: the OJS fields a successor BullMQ promoted carries in its options until a script adopts it (lua/includes/ojs-successor.lua). */
function withPromotedFields(hash: Record<string, string>): Record<string, string> {
  if (hash.ojsKey !== undefined || hash.opts === undefined || !hash.opts.includes('"ojs"')) return hash;
  const ojs = (JSON.parse(hash.opts) as { ojs?: { key?: string; policy?: string; meta?: string } }).ojs;
  if (typeof ojs?.key !== 'string') return hash;
  const adopted: Record<string, string> = { ...hash, ojsKey: ojs.key };
  if (typeof ojs.policy === 'string') adopted.ojsPolicy = ojs.policy;
  if (typeof ojs.meta === 'string' && ojs.meta !== '') adopted.ojsMeta = ojs.meta;
  return adopted;
}

export function ojsJobView(queue: string, id: string, state: OjsJobState, stored: Record<string, string>, dueMs?: number): OjsJob {
  const hash = withPromotedFields(stored);
  const opts = jobOptsFromHash(hash);
  const timestamp = Number(hash.timestamp ?? 0);
  const bullPriority = Number(hash.priority ?? 0);
  const finished = hash.ojsCancelledOn ?? hash.finishedOn;
  return buildJobView({
    id,
    type: hash.name ?? '',
    queue,
    args: JSON.parse(hash.data ?? 'null') as JsonValue,
    meta: JSON.parse(hash.ojsMeta ?? '{}') as Record<string, JsonValue>,
    state,
    attempt: Number(hash.ats ?? hash.atm ?? 0),
    max_attempts: opts.attempts && opts.attempts > 0 ? opts.attempts : 1,
    priority: bullPriority > 0 ? PRIORITY_BASE - bullPriority : 0,
    created_at: timestamp,
    scheduled_at: dueMs ?? timestamp + Number(hash.delay ?? 0),
    // Stored compact (compactUniquePolicy).
    unique: hash.ojsPolicy ? parseUniquePolicy(JSON.parse(hash.ojsPolicy)) : null,
    uniqueness_key: hash.ojsKey ?? null,
    completed_at: finished ? Number(finished) : null,
    replaced_by: hash.ojsReplacedBy || null,
    ...duplicateCountOf(hash.ojsDup),
  });
}

/**
 * Duplicate counts as a job hash keeps them (lua/includes/ojs-count-duplicate.lua): one field,
 * `"<count>,<ms>,<request token>"`; none before the first.
 */
export function duplicateCountOf(field: string | null | undefined): { duplicate_count: number; last_duplicate_at: number } | null {
  if (!field) return null;
  const [count, at] = field.split(',', 2);
  return { duplicate_count: Number(count), last_duplicate_at: Number(at) };
}

/**
 * The BullMQ `Job` a unique add answers with, carrying its outcome (`job.unique`): the new job,
 * or the existing one bound to its own queue (`queueOf`: the wrapper, or a sibling queue).
 */
export function jobForReply(
  queueOf: (name: string) => Queue,
  reply: UniqueAddReply,
  prepared: PreparedUnique,
): UniqueJob<any, any, string, AddOutcomeKind> {
  // A report-only entry of addBulk was sent as its shadow: the answer names the policy's own key.
  const uniquenessKey = ((prepared as { shadowOf?: PreparedUnique }).shadowOf ?? prepared).key;
  switch (reply.outcome) {
    case 'created':
      return Object.assign(reply.job, {
        unique: (reply.report === undefined
          ? { outcome: 'created', uniquenessKey }
          : { outcome: 'created', uniquenessKey, ...reply.report }) satisfies UniqueOutcome<'created'>,
      });
    case 'replaced': {
      const [replaced, ...others] = reply.replaced.map((job) => ojsJobView(job.queue, job.id, job.state, job.hash));
      const unique: UniqueOutcome<'replaced'> = { outcome: 'replaced', uniquenessKey, replaced: replaced! };
      if (others.length > 0) unique.also_replaced = others;
      return Object.assign(reply.job, { unique });
    }
    case 'deduplicated': {
      const existing = jobFromHash(queueOf(reply.existing.queue), reply.existing.id, reply.existing.hash);
      const unique: UniqueOutcome<'deduplicated'> = {
        outcome: 'deduplicated',
        uniquenessKey,
        existingJobId: reply.existing.id,
        existingJobState: reply.existing.state,
      };
      if (reply.successor !== undefined) unique.successor = { id: reply.successor };
      return Object.assign(existing, { unique });
    }
    case 'updated': {
      const existing = jobFromHash(queueOf(reply.existing.queue), reply.existing.id, reply.existing.hash);
      return Object.assign(existing, {
        unique: {
          outcome: 'updated',
          uniquenessKey,
          existingJobId: reply.existing.id,
          existingJobState: reply.existing.state,
          changed: reply.changed,
        } satisfies UniqueOutcome<'updated'>,
      });
    }
  }
}

/** An entry of a batch that was not added: its Job (never stored), with the error a single add would have thrown. */
export function notAdded(job: Job, uniquenessKey: string, error: OjsUniqueError): UniqueJob<any, any, string, 'rejected'> {
  const rejected = job as UniqueJob<any, any, string, 'rejected'>;
  rejected.unique = isDuplicateJobError(error)
    ? { outcome: 'rejected', uniquenessKey, existingJobId: error.existingJobId, existingJobState: error.existingJobState, error }
    : { outcome: 'rejected', uniquenessKey, error };
  return rejected;
}
