/**
 * The conformance suite through `withUniqueness(queue)`: a subject whose `enqueue` maps the OJS
 * `JobInput` to `add(name, data, opts)` (or a one-entry `addBulk`) and maps the returned job's
 * `unique` outcome back to an `EnqueueResult`. `getJob`, `cancel` and the lifecycle go through
 * `createBullMQBackend` on the same Redis and prefix, which sees the wrapper's jobs.
 *
 * JobInput → BullMQ (docs/bullmq.md):
 *   type → job name; queue → the wrapped Queue's name (one wrapper per OJS queue); args → data;
 *   meta → opts.ojsMeta (a unique add only: a plain add is BullMQ's own, which has no meta);
 *   id → opts.jobId (none given: a UUIDv7, as createBullMQBackend does, because OJS ids are global
 *   while BullMQ's counter ids are per queue, and the OJS backend's getJob could not tell two
 *   queues' job "1" apart); scheduled_at → opts.delay (from now; a past time is no delay);
 *   max_attempts → opts.attempts (default 3 and exponential 1 s backoff, as createBullMQBackend);
 *   priority → opts.priority (BullMQ's scale, as createBullMQBackend maps it); unique → opts.unique.
 */
import { Queue, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import {
  withUniqueness,
  type BullMQBackend,
  type UniqueJobsOptions,
  type UniqueOutcome,
  type UniqueQueue,
} from '../../../adapters/bullmq/index.js';
import { bullmqPriority, PRIORITY_BASE } from '../../../adapters/bullmq/bullmq-job-view.js';
import { type EnqueueResult, type JobInput, type OjsJob } from '../../../src/index.js';
import { DEFAULT_QUEUE, scheduledAtMs, uuidv7 } from '../../../src/internal.js';
import createBullMQSubject from '../subjects/bullmq.js';
import { PRIORITY_RANGE } from '../../../src/input-limits.js';
import type { ConformanceSubject } from '../conformance-subject.js';

export const BULLMQ_ENTRY_POINTS = ['withUniqueness.add', 'withUniqueness.addBulk'] as const;
export type BullMQEntryPoint = (typeof BULLMQ_ENTRY_POINTS)[number];

/** What an add through the wrapper returns: a unique add's job has `unique`, a plain add's has not. */
type AddedJob = Job & { unique?: UniqueOutcome };

export interface BullMQAddArguments {
  queue: string;
  name: string;
  data: unknown;
  opts: UniqueJobsOptions;
}

/** Part of a JobInput the entry point has no way to say; the reason goes in a skipped test's title. */
export class Inexpressible {
  constructor(readonly reason: string) {}
}

/** The `add` arguments a user would write for `input`, or why there are none. */
export function bullmqAddArguments(input: JobInput): BullMQAddArguments | Inexpressible {
  const opts: UniqueJobsOptions = { attempts: 3, backoff: { type: 'exponential', delay: 1000 } };
  const unique = Object.hasOwn(input, 'unique') ? input.unique : undefined;
  if (unique !== undefined) opts.unique = unique;
  if (input.meta !== undefined) {
    // `unique: null` is no policy (a plain add), like an absent one.
    if (unique === undefined || unique === null) {
      if (Object.keys(input.meta).length > 0) return new Inexpressible('a plain BullMQ add has no meta (opts.ojsMeta needs opts.unique)');
    } else opts.ojsMeta = input.meta as Record<string, unknown>;
  }
  opts.jobId = input.id ?? uuidv7();
  if (input.max_attempts !== undefined) opts.attempts = input.max_attempts;
  if (input.priority !== undefined) {
    if (typeof input.priority !== 'number' || !Number.isSafeInteger(input.priority))
      return new Inexpressible('priority is not an integer: BullMQ has no such priority to map it to');
    // OJS priorities outside the portable range are refused by the core; a BullMQ priority is
    // BullMQ's own scale, where the same number is a valid priority.
    if (input.priority < PRIORITY_RANGE.min || input.priority > PRIORITY_RANGE.max) {
      return new Inexpressible(
        `priority ${input.priority} is outside the portable OJS range; BullMQ's own scale has no such bound to compare`,
      );
    }
    // The backend's scale clamps at its base; a higher OJS priority has no BullMQ priority of its own.
    if (input.priority >= PRIORITY_BASE)
      return new Inexpressible(`priority ${input.priority} is beyond the BullMQ scale the backend maps OJS priorities to`);
    const priority = bullmqPriority(input.priority);
    if (priority !== undefined) opts.priority = priority;
  }
  if (input.scheduled_at !== undefined) {
    const at = scheduledAtMs(input.scheduled_at);
    if (at === null) return new Inexpressible('scheduled_at is not a time: no delay expresses it');
    if (at > Date.now()) opts.delay = at - Date.now();
  }
  return { queue: input.queue ?? DEFAULT_QUEUE, name: input.type, data: input.args, opts };
}

/**
 * Adds through one of the wrapper's methods. Wrapped queues are opened per OJS queue name on the
 * given client and prefix, and closed by `close()`.
 */
export class BullMQEntry {
  readonly #wrapped = new Map<string, UniqueQueue>();

  constructor(
    readonly entry: BullMQEntryPoint,
    readonly client: Redis,
    readonly prefix: string,
    readonly backend: BullMQBackend,
  ) {}

  queue(name: string): UniqueQueue {
    let queue = this.#wrapped.get(name);
    if (!queue) {
      // Duplicate counts on, as the suite's §5 duplicate counts need.
      queue = withUniqueness(new Queue(name, { connection: this.client, prefix: this.prefix }), { countDuplicates: true });
      queue.on('error', () => undefined);
      // A plain add is BullMQ's own and does not record the queue in the prefix's queue set,
      // so the OJS backend is told about the queue to find such jobs.
      this.backend.queue(name);
      this.#wrapped.set(name, queue);
    }
    return queue;
  }

  /**
   * Settles once every queue opened so far has written what BullMQ's Queue writes when it is
   * constructed (its meta hash): those writes are the user's `new Queue`, not the add's.
   */
  async opened(): Promise<void> {
    await Promise.all(
      [...this.#wrapped.values()].map(
        (queue) => (queue.unwrapped as unknown as { queueMetaInitialized?: Promise<void> }).queueMetaInitialized,
      ),
    );
  }

  /** The raw add: what the entry point returned (the one job), or what it threw. */
  async add(args: BullMQAddArguments): Promise<AddedJob> {
    const queue = this.queue(args.queue);
    if (this.entry === 'withUniqueness.add') return queue.add(args.name, args.data, args.opts);
    const [job] = await queue.addBulk([{ name: args.name, data: args.data, opts: args.opts }]);
    if (job?.unique?.outcome === 'rejected') throw job.unique.error;
    return job!;
  }

  async enqueue(input: JobInput): Promise<EnqueueResult> {
    const args = bullmqAddArguments(input);
    if (args instanceof Inexpressible) throw new Error(`${this.entry} cannot express this job: ${args.reason}`);
    return this.toResult(await this.add(args));
  }

  /** The entry point's answer as an EnqueueResult, the jobs read back through the OJS backend. */
  async toResult(job: AddedJob): Promise<EnqueueResult> {
    const read = async (id: string): Promise<OjsJob> => {
      const found = await this.backend.getJob(id);
      if (!found) throw new Error(`${this.entry}: job ${id} was returned but cannot be found`);
      return found;
    };
    const outcome = job.unique;
    if (outcome === undefined) return { outcome: 'created', job: await read(job.id!) };
    switch (outcome.outcome) {
      case 'created':
        return { outcome: 'created', job: await read(job.id!) };
      case 'deduplicated':
        if (outcome.existingJobId !== job.id)
          throw new Error(`${this.entry}: deduplicated job ${job.id} is not existingJobId ${outcome.existingJobId}`);
        return outcome.successor === undefined
          ? { outcome: 'deduplicated', job: await read(job.id!) }
          : { outcome: 'deduplicated', job: await read(job.id!), successor: outcome.successor };
      case 'updated':
        if (outcome.existingJobId !== job.id)
          throw new Error(`${this.entry}: updated job ${job.id} is not existingJobId ${outcome.existingJobId}`);
        return { outcome: 'updated', job: await read(job.id!), changed: outcome.changed };
      case 'replaced': {
        // The superseded jobs' views are the entry point's own (as they were after the add), as the backend's are.
        const result: EnqueueResult = { outcome: 'replaced', job: await read(job.id!), replaced: outcome.replaced };
        if (outcome.also_replaced !== undefined) result.also_replaced = outcome.also_replaced;
        return result;
      }
      case 'rejected':
        throw outcome.error ?? new Error(`${this.entry}: rejected without an error`);
    }
  }

  async close(): Promise<void> {
    await Promise.all([...this.#wrapped.values()].map((queue) => queue.close()));
    this.#wrapped.clear();
  }
}

/** The BullMQ conformance subject with `enqueue` going through `entry`. */
export async function createBullMQEntrySubject(
  entry: BullMQEntryPoint,
  options: { prefix: string },
): Promise<ConformanceSubject & { through: BullMQEntry }> {
  const base = await createBullMQSubject({ prefix: options.prefix });
  const backend = base.backend as BullMQBackend;
  const through = new BullMQEntry(entry, backend.client as Redis, backend.prefix, backend);
  return {
    ...base,
    through,
    backend: {
      capabilities: backend.capabilities,
      enqueue: (input) => through.enqueue(input),
      getJob: (id) => backend.getJob(id),
      cancel: (id) => backend.cancel(id),
      close: () => backend.close(),
    },
    inexpressible: {
      plainCustomId: "a plain add (no unique) is BullMQ's own add, which returns the existing job for a taken jobId instead of refusing it",
    },
    async close(result) {
      await through.close();
      await base.close(result);
    },
  };
}
