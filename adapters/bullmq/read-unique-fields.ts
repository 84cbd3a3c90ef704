/**
 * `readUniqueFields(queue, job)`: what ojs-unique keeps on a BullMQ job beside BullMQ's own fields,
 * for a dashboard (bull-board shows a job's `data` and `opts`; docs/bull-board.md has the recipe).
 * BullMQ's `Job` does not load those hash fields, so this reads them: one HMGET.
 */
import type { Job, Queue } from 'bullmq';
import { parseUniquePolicy, type UniquePolicy } from '../../src/unique-policy.js';
import { queueClient } from './bullmq-host.js';
import { duplicateCountOf } from './bullmq-job-view.js';

/** A BullMQ job's unique fields, as the OJS job view names them (OjsJob). */
export interface UniqueFields {
  /** The policy the job was added with. */
  readonly unique: UniquePolicy;
  /** Its uniqueness key (spec §4). */
  readonly uniqueness_key: string;
  /** How many duplicate adds met the job (docs/decisions.md, "Duplicate counts"); 0 for none. */
  readonly duplicate_count: number;
  /** ISO 8601 UTC (Redis TIME): when the last counted duplicate met it; absent for none. */
  readonly last_duplicate_at?: string;
}

/**
 * The unique fields of `job` (a `Job` of `queue`, or its id): null for a job added without a
 * policy, or one that no longer exists (a replaced job is archived: `getJob` of the backend reads it).
 */
export async function readUniqueFields(queue: Queue, job: Pick<Job, 'id'> | string): Promise<UniqueFields | null> {
  const id = typeof job === 'string' ? job : job.id;
  if (id === undefined) return null;
  const client = await queueClient(queue);
  const [policy, key, duplicates] = (await client.hmget(queue.toKey(id), 'ojsPolicy', 'ojsKey', 'ojsDup')) as (string | null)[];
  if (!policy || !key) return null;
  const counted = duplicateCountOf(duplicates);
  return {
    unique: parseUniquePolicy(JSON.parse(policy)),
    uniqueness_key: key,
    duplicate_count: counted?.duplicate_count ?? 0,
    ...(counted ? { last_duplicate_at: new Date(counted.last_duplicate_at).toISOString() } : {}),
  };
}
