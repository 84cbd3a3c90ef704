/**
 * BullMQ's own deduplication options as an OJS policy.
 */
import { UPDATE_FIELDS, type UniquePolicyInput } from '../unique-policy.js';
import type { OjsJobState } from '../job-state.js';
import { OptionReader, describe } from './option-reader.js';
import { secondsToPeriod } from './seconds-to-period.js';

export interface BullMQDeduplicationOptions {
  id: string;
  /** Milliseconds; absent or 0 is simple mode (until the job completes or fails). */
  ttl?: number;
  /** Each duplicate within the TTL restarts it. (Default: false.) */
  extend?: boolean;
  /** A duplicate replaces a delayed job's data and options. (Default: false.) */
  replace?: boolean;
  /**
   * While the job is active, a duplicate's data is kept (the latest one) and added as a job when
   * it finishes; the TTL is then ignored, as in BullMQ. (Default: false.)
   */
  keepLastIfActive?: boolean;
}

/** The deduplicating part of BullMQ's `JobsOptions`. */
export interface BullMQUniqueOptions {
  /** A custom job id: adding it again returns the existing job while that job exists. */
  jobId?: string;
  deduplication?: BullMQDeduplicationOptions;
}

/** The states in which a BullMQ job still exists (a removed job frees its id and key: `cancelled` here). */
const EXISTING: OjsJobState[] = ['scheduled', 'available', 'pending', 'active', 'retryable', 'completed', 'discarded'];
/** Until it completes or fails for good (simple mode). */
const UNFINISHED: OjsJobState[] = ['scheduled', 'available', 'pending', 'active', 'retryable'];

/**
 * `queue.add(name, data, { jobId, deduplication })` as an OJS policy, or `null` when neither is
 * given. The id is the caller's key (the `x_key` extension), per queue as in BullMQ. When both
 * are given, deduplication decides, as in BullMQ (which checks it first); give `jobId` to the
 * job as its `id`.
 *  - `jobId`: unique while the job exists, the existing job returned.
 *  - simple mode `{ id }`: until the job completes or fails.
 *  - throttle mode `{ id, ttl }`: for `ttl` ms from the first add, in any state.
 *  - `extend`: each duplicate restarts the TTL (`x_period_anchor: "last_duplicate"`).
 *  - `replace` (debounce with a `delay`): a duplicate meeting the delayed job updates it in place
 *    with the new data and options (`x_update` on `scheduled`).
 *  - `keepLastIfActive`: a duplicate meeting the active job is kept as its successor, the latest
 *    one, added when it completes or fails for good (`x_successor: "latest"`). BullMQ then ignores
 *    `ttl` (and so `extend`): the key lives until the job finishes, simple mode.
 *
 * @throws UntranslatableOptionError naming the option (a bad `ttl`).
 */
export function fromBullMQ(options: BullMQUniqueOptions): UniquePolicyInput | null {
  const reader: OptionReader = new OptionReader('bullmq', options, ['jobId', 'deduplication']);
  const jobId = reader.string('jobId');
  if (reader.get('deduplication') === undefined) {
    return jobId === undefined ? null : { keys: ['queue'], x_key: jobId, states: EXISTING, on_conflict: 'ignore' };
  }
  const dedup: OptionReader = reader.nested('deduplication', ['id', 'ttl', 'extend', 'replace', 'keepLastIfActive']);
  const id = dedup.string('id');
  if (id === undefined) dedup.fail('id', 'is required');
  const keepLast = dedup.boolean('keepLastIfActive');
  const ttl = dedup.get('ttl');
  if (ttl !== undefined && !(typeof ttl === 'number' && Number.isSafeInteger(ttl) && ttl >= 0)) {
    dedup.fail('ttl', `expected whole milliseconds, got ${describe(ttl)}`);
  }
  const policy: UniquePolicyInput = { keys: ['queue'], x_key: id, states: UNFINISHED, on_conflict: 'ignore' };
  if (keepLast) {
    // BullMQ persists the key for the job's whole life under keepLastIfActive: simple mode.
    policy.x_successor = 'latest';
  } else if (typeof ttl === 'number' && ttl > 0) {
    // The TTL key outlives the job's completion or failure: a duplicate in any state is ignored.
    policy.period = secondsToPeriod(ttl / 1000)!;
    policy.states = EXISTING;
    if (dedup.boolean('extend')) policy.x_period_anchor = 'last_duplicate';
  }
  // Without a TTL, BullMQ's extend has nothing to extend.
  if (dedup.boolean('replace')) policy.x_update = { scheduled: [...UPDATE_FIELDS] };
  return policy;
}
