/**
 * Job schedulers (`upsertJobScheduler`) whose jobs are unique, by a relay.
 *
 * BullMQ makes each next scheduler job in its own Lua (when the previous one is taken by a
 * worker), with nothing the adapter can reach without patching the worker: a policy cannot ride on
 * that add. What the scheduler can carry is a template: the wrapped queue's `upsertJobScheduler`,
 * given a template with `opts.unique`, schedules a small relay job instead
 * ({@link UNIQUE_SCHEDULER_JOB_NAME}, its data the real job's name, data, options and policy), and
 * {@link makeUniqueSchedulerProcessor} wraps the worker's processor so that a relay job adds the
 * real job through the wrapper's unique path (`queue.add(name, data, { ...opts, unique })`) and
 * completes with that add's outcome; every other job goes to the processor unchanged.
 *
 * The relay is at least once, as every BullMQ job (its retries, a stalled job run again): the real
 * job's id is derived from the relay job's own id ({@link relayJobId}; BullMQ gives each tick its
 * own), so a run after an earlier run's add went through finds that id taken and reports the job
 * it added, rather than meeting it as a duplicate (which `replace` would cancel). A template's own
 * `jobId` is kept as given. A duplicate the policy rejects completes the relay: the tick's job was
 * refused, as asked.
 */
import { createHash } from 'node:crypto';
import type { Job, Processor, Queue } from 'bullmq';
import { isDuplicateJobError, isInvalidJobInputError } from '../../src/errors.js';
import type { UniquePolicyInput } from '../../src/unique-policy.js';
import { prepareUnique } from '../../src/unique-enqueue.js';
import { BULLMQ_EXTENSIONS } from './bullmq-extensions.js';
import type { DataOf, NameOf, ResultOf, UniqueJobsOptions, UniqueQueue } from './bullmq-types.js';

/** The name of the relay jobs a unique scheduler makes. */
export const UNIQUE_SCHEDULER_JOB_NAME = 'ojs-unique-scheduler';

/** How many times a relay job is tried (its add fails only on a backend error). */
export const RELAY_ATTEMPTS = 3;

/** What a relay job carries: the real job, as the template gave it. */
export interface RelayData {
  name: string;
  data: unknown;
  opts: Record<string, unknown>;
  unique: UniquePolicyInput;
  ojsMeta?: Record<string, unknown>;
}

/** What a relay job completes with. */
export interface RelayResult {
  outcome: 'created' | 'deduplicated' | 'replaced' | 'updated' | 'rejected';
  jobId: string;
}

/**
 * The template BullMQ's scheduler gets for a template with a policy: the relay job. The policy and
 * the real job are validated now (an `InvalidJobInputError` names `jobTemplate.…`), so a bad
 * policy fails at upsert rather than at every tick.
 */
export function relayTemplate(
  queueName: string,
  template: { name?: string; data?: unknown; opts?: UniqueJobsOptions },
  schedulerId: string,
  unique: UniquePolicyInput,
): { name: string; data: RelayData; opts: Record<string, unknown> } {
  const { unique: _policy, ojsMeta, ...opts } = template.opts ?? {};
  const name = template.name ?? schedulerId;
  const data = template.data === undefined ? {} : template.data;
  prepareUnique({ type: name, queue: queueName, args: data, meta: ojsMeta ?? {}, unique }, { extensions: BULLMQ_EXTENSIONS });
  const relay: RelayData = { name, data, opts, unique };
  if (ojsMeta !== undefined) relay.ojsMeta = ojsMeta;
  return { name: UNIQUE_SCHEDULER_JOB_NAME, data: relay, opts: { attempts: RELAY_ATTEMPTS, removeOnComplete: true } };
}

/**
 * The worker's processor, with relay jobs handled: give it to `new Worker(name, …)` of the queue
 * the schedulers are on. `queue` is that queue wrapped by `withUniqueness` (the real jobs are added
 * through it). `processor` gets the queue's own jobs, typed by the queue's data, result and name
 * types as BullMQ's `Worker` types them; the processor returned also takes the relay jobs (their
 * `RelayData`, completing with a `RelayResult`), as the worker will see both.
 */
export function makeUniqueSchedulerProcessor<Q extends Queue>(
  queue: UniqueQueue<Q>,
  processor: Processor<DataOf<Q>, ResultOf<Q>, NameOf<Q>>,
): Processor<DataOf<Q> | RelayData, ResultOf<Q> | RelayResult, NameOf<Q> | typeof UNIQUE_SCHEDULER_JOB_NAME> {
  // The relay's real job is added by name and data as the template gave them (checked at upsert).
  const unique = queue as unknown as UniqueQueue;
  return async (job, token, signal) => {
    if (job.name !== UNIQUE_SCHEDULER_JOB_NAME) return processor(job as Job<DataOf<Q>, ResultOf<Q>, NameOf<Q>>, token, signal);
    const relay = job.data as RelayData;
    const derivedId = relay.opts.jobId === undefined ? relayJobId(job.id!) : undefined;
    const opts = {
      ...relay.opts,
      ...(derivedId === undefined ? {} : { jobId: derivedId }),
      unique: relay.unique,
      ...(relay.ojsMeta ? { ojsMeta: relay.ojsMeta } : {}),
    } as UniqueJobsOptions & { unique: UniquePolicyInput };
    try {
      const added = await unique.add(relay.name, relay.data, opts);
      return { outcome: added.unique.outcome, jobId: added.id! } satisfies RelayResult;
    } catch (error) {
      if (isDuplicateJobError(error)) return { outcome: 'rejected', jobId: error.existingJobId } satisfies RelayResult;
      // An earlier run of this relay job added it (only this relay job uses that id).
      if (derivedId !== undefined && isInvalidJobInputError(error) && error.issues.some((issue) => issue.path === 'opts.jobId'))
        return { outcome: 'created', jobId: derivedId } satisfies RelayResult;
      throw error;
    }
  };
}

/**
 * The id of the real job a relay job adds: a digest of the relay job's id (BullMQ refuses `:` in a
 * custom id, and scheduler job ids have them), the same on every run of that relay job.
 */
export function relayJobId(relayId: string): string {
  return `ojs-relay-${createHash('sha256').update(relayId).digest('hex').slice(0, 32)}`;
}

/** Whether a job is a relay job of a unique scheduler. */
export function isUniqueSchedulerRelay(job: Pick<Job, 'name'>): boolean {
  return job.name === UNIQUE_SCHEDULER_JOB_NAME;
}
