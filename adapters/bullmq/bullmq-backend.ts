/**
 * `createBullMQBackend`: the core's `UniqueJobsBackend` over BullMQ, so the shared conformance
 * suite (and any OJS front end) runs on BullMQ unchanged.
 *
 * Any OJS queue name is a BullMQ queue of that name, opened on demand (default `default`). Job
 * ids are UUIDv7 unless the caller gives one (BullMQ's custom-id rules apply). `getJob(id)` and
 * `cancel(id)` look in every queue this backend, or another process's backend with the same
 * prefix, has used (a small set at `<prefix>:ojs:global:queues`).
 *
 * Outages: a client the backend creates (from a URL or options) has bounded retries and a
 * command timeout, so every call settles with a `BackendError` while Redis is unreachable. A
 * client the caller passes is used as configured (docs/bullmq.md, "Outages").
 */
import { reportOnlyUnsupported } from '../../src/report-only.js';
import { Queue, SpanKind, TelemetryAttributes, type ConnectionOptions, type JobsOptions, type Telemetry } from 'bullmq';
import { Cluster, Redis } from 'ioredis';
import { BackendError, InvalidJobInputError, isDuplicateJobError, underPath } from '../../src/errors.js';
import type { JobInput, OjsJob } from '../../src/job.js';
import type { OjsJobState } from '../../src/job-state.js';
import { buildJobView } from '../../src/job-view.js';
import { prepareUnique } from '../../src/unique-enqueue.js';
import { BULLMQ_EXTENSIONS } from './bullmq-extensions.js';
import type { EnqueueResult, UniqueJobsBackend, UniqueJobsCapabilities } from '../../src/unique-jobs-backend.js';
import { DEFAULT_QUEUE } from '../../src/uniqueness-key.js';
import { ojsJobView } from './bullmq-job-view.js';
import { ojsAddRequest, type OjsAddRequest } from './bullmq-request.js';
import { typedErrorFor, backendErrorFor, errorForReply } from './bullmq-errors.js';
import { checkConnection, isIoredis } from './bullmq-host.js';
import { queueHandle } from './bullmq-queue-handle.js';
import { COMMANDS, runScript, composedScripts } from './bullmq-script-set.js';
import { indexKey, layoutArgs, queueBase, queueLayoutKey, queueRegistryKey, type IndexKey } from './bullmq-sidecar-keys.js';
import { BulkSpans, OUTCOME_ATTRIBUTE } from './bullmq-telemetry.js';
import { isKeyRef, keyRefLookup, type KeyLookup, type UniquenessKeyRef } from '../../src/key-lookup.js';
import { explainKey, findHeldJob, lookupIndexes, readReplacedJobs, releaseKey } from './bullmq-lookups.js';
import type { UniqueExplanation } from '../../src/unique-explain.js';
import {
  decodeUniqueAddReply,
  pairs,
  prepareUniqueAdd,
  uniqueAdd,
  type PreparedUniqueAdd,
  type UniqueAddReply,
  type UniqueAddRequest,
} from './bullmq-enqueue.js';
import { DEFAULT_CANCELLED_RETENTION_MS } from './bullmq-retention.js';
import { flowRefusalIssue, requireUniqueFlow, runUniqueFlow, uniqueFlowArgs, uniqueNodeArgs } from './bullmq-unique-flow.js';

/** `maxRetriesPerRequest` of a client the backend creates: a command waits for at most this many reconnects. */
export const DEFAULT_MAX_RETRIES_PER_REQUEST = 2;
/** `commandTimeout` of a client the backend creates, in ms: the longest a call waits for Redis. */
export const DEFAULT_COMMAND_TIMEOUT_MS = 5_000;

export interface BullMQBackendOptions {
  /**
   * An ioredis client or `Cluster` (shared: used as configured, not closed by `close()`), or a
   * Redis URL / ioredis options (owned: the backend creates the client with `maxRetriesPerRequest`
   * and `commandTimeout` below, unless the options set them). A Redis Cluster needs a `Cluster`
   * and a hash-tagged `prefix` (docs/bullmq.md, "Redis Cluster").
   */
  connection: Redis | Cluster | string | ConnectionOptions;
  /** BullMQ key prefix. (Default: `"bull"`, BullMQ's own.) */
  prefix?: string;
  /** `max_attempts` for jobs that do not set it. (Default: 3, as the memory backend.) */
  defaultMaxAttempts?: number;
  /**
   * BullMQ backoff between attempts. A backoff is needed for OJS `retryable`: without one BullMQ
   * retries at once and the job is `available` again immediately.
   * (Default: `{ type: 'exponential', delay: 1000 }`, i.e. 1 s, 2 s, 4 s … as the memory backend.)
   */
  backoff?: JobsOptions['backoff'];
  /** How long a cancelled job's archive stays readable, in ms. (Default: 7 days.) */
  cancelledRetentionMs?: number;
  /** As `withUniqueness`'s `duplicateProbe` (docs/bullmq.md, "The duplicate probe"). (Default: true.) */
  duplicateProbe?: boolean;
  /** As `withUniqueness`'s `countDuplicates` (docs/decisions.md, "Duplicate counts"). (Default: false.) */
  countDuplicates?: boolean;
  /** ioredis `maxRetriesPerRequest` of a client the backend creates. (Default: 2.) */
  maxRetriesPerRequest?: number;
  /**
   * ioredis `commandTimeout` of a client the backend creates, in ms; also how long a call waits
   * for a queue opened during an outage to connect. (Default: 5000.)
   */
  commandTimeout?: number;
  /**
   * BullMQ's `telemetry` option (bullmq-otel) for the queues the backend opens: `enqueue` makes
   * the `add <queue>.<type>` span a plain add makes (with `ojs.unique.outcome` for a job with a
   * policy), `enqueueMany` an `addBulk <queue>` span per queue (with its jobs' outcomes), and the
   * caller's trace context is stored on each job (docs/bullmq.md, "Telemetry"). (Default: none.)
   */
  telemetry?: Telemetry;
}

export interface BullMQBackend extends UniqueJobsBackend {
  /** The BullMQ `Queue` for an OJS queue name (opened on first use, closed by `close()`). */
  queue(name?: string): Queue;
  /** The Redis client (or Cluster) the backend uses. */
  readonly client: Redis | Cluster;
  readonly prefix: string;
  /**
   * Enqueues a batch all-or-nothing, in one script: every job is validated first (an issue's path
   * starts with the job's index, `[2].unique.period`; a caller-chosen id appears once), then every
   * job is checked against what is stored and against the batch's earlier jobs, as if enqueued
   * one by one, before any is written: a `reject` duplicate or a taken id throws and writes
   * nothing. Results are in input order. On Redis Cluster every queue of a batch must share one
   * hash slot (a hash-tagged prefix).
   */
  enqueueMany(jobs: readonly JobInput[]): Promise<EnqueueResult[]>;
  /**
   * The job holding a key now: the one `enqueue(job)` would meet as its duplicate (the oldest its
   * policy counts), or by `{ uniqueness_key }` the oldest unfinished job under it; null when none.
   * @throws InvalidJobInputError for a job without `unique` (no key) or a bad job or key.
   */
  findUniqueJob(target: JobInput | UniquenessKeyRef): Promise<OjsJob | null>;
  /**
   * Releases a key (named as for {@link findUniqueJob}): the next enqueue of it inserts, whatever
   * holds it now. The jobs holding it stay as they are (a live one still runs; its view still
   * reports the key), no longer counted. Resolves to how many jobs stopped holding it.
   */
  releaseUniqueKey(target: JobInput | UniquenessKeyRef): Promise<number>;
  /**
   * What `enqueue(job)` would do now, and why (src/unique-explain.ts), writing nothing: its key
   * and pre-image, every job recorded under the key (state, window end, counted or not) and the
   * outcome. @throws InvalidJobInputError for a job without `unique` or a bad job, as `enqueue` would.
   */
  explainUnique(job: JobInput): Promise<UniqueExplanation>;
  /**
   * The jobs a `replace` by job `id` superseded, oldest first, as `getJob` reads them (a cancelled
   * one from its archive, with `replaced_by: id`); one gone meanwhile (an archive past
   * `cancelledRetentionMs`) is left out. [] when `id` replaced nothing or is unknown.
   */
  getReplacedJobs(id: string): Promise<OjsJob[]>;
}

/** An enqueue as the backend sends it (`#plan`). */
interface EnqueuePlan extends OjsAddRequest {
  input: JobInput;
  queueName: string;
  queue: Queue;
}

export function createBullMQBackend(options: BullMQBackendOptions): BullMQBackend {
  return new BullMQUniqueJobsBackend(options);
}

class BullMQUniqueJobsBackend implements BullMQBackend {
  readonly capabilities: UniqueJobsCapabilities = {
    unique_jobs: {
      strength: 'strong',
      mechanism: "one Lua script per enqueue: the OJS check and BullMQ's own add script, atomic in Redis",
      replace_active: false,
      extensions: [...BULLMQ_EXTENSIONS],
    },
  };
  readonly client: Redis | Cluster;
  readonly prefix: string;
  readonly #ownsClient: boolean;
  readonly #queues = new Map<string, Queue>();
  /** Queues whose connection has been ready once: later calls skip the wait for it. */
  readonly #ready = new WeakSet<Queue>();
  readonly #defaultMaxAttempts: number;
  readonly #backoff: JobsOptions['backoff'];
  readonly #retentionMs: number;
  readonly #probe: boolean;
  readonly #countDuplicates: boolean;
  readonly #telemetry: Telemetry | undefined;
  /** How long a call waits for a queue's connection; undefined: as long as the caller's client does. */
  readonly #connectTimeoutMs: number | undefined;

  constructor(options: BullMQBackendOptions) {
    composedScripts(); // the version guard: fail at construction, not at the first enqueue
    checkConnection(options.connection, 'createBullMQBackend');
    const bounded = {
      maxRetriesPerRequest: options.maxRetriesPerRequest ?? DEFAULT_MAX_RETRIES_PER_REQUEST,
      commandTimeout: options.commandTimeout ?? DEFAULT_COMMAND_TIMEOUT_MS,
    };
    if (isIoredis(options.connection)) {
      this.client = options.connection as Redis | Cluster;
      this.#ownsClient = false;
      this.#connectTimeoutMs = options.commandTimeout ?? callerTimeout(options.connection);
    } else {
      this.client =
        typeof options.connection === 'string'
          ? new Redis(options.connection, bounded)
          : new Redis({ ...bounded, ...(options.connection as object) });
      // The backend's own client: a connection error reaches the caller as the BackendError of
      // the call that meets it; without a listener ioredis would print it (the library logs nothing).
      this.client.on('error', ignoreError);
      this.#ownsClient = true;
      this.#connectTimeoutMs = (this.client.options.commandTimeout as number | undefined) ?? DEFAULT_COMMAND_TIMEOUT_MS;
    }
    this.prefix = options.prefix ?? 'bull';
    this.#defaultMaxAttempts = options.defaultMaxAttempts ?? 3;
    this.#backoff = options.backoff ?? { type: 'exponential', delay: 1000 };
    this.#retentionMs = options.cancelledRetentionMs ?? DEFAULT_CANCELLED_RETENTION_MS;
    this.#probe = options.duplicateProbe ?? true;
    this.#countDuplicates = options.countDuplicates ?? false;
    this.#telemetry = options.telemetry;
  }

  queue(name: string = DEFAULT_QUEUE): Queue {
    let queue = this.#queues.get(name);
    if (!queue) {
      // skipMetasUpdate: BullMQ's Queue writes its meta hash on construction; this backend writes
      // it after the queue's first add that wrote (its handle's register), so a refused add leaves nothing.
      queue = new Queue(name, { connection: this.client, prefix: this.prefix, skipMetasUpdate: true, telemetry: this.#telemetry });
      this.#queues.set(name, queue);
      // The library's own queue: errors surface as the typed errors of the calls that meet them.
      queue.on('error', ignoreError);
    }
    return queue;
  }

  /**
   * Waits for the queue's connection to be ready. BullMQ waits for a queue opened during an outage
   * until Redis is back, without a bound: bounded here. A queue whose start-up failed is
   * dropped so that the next call opens it afresh. Nothing has been sent for the job yet.
   */
  async #whenReady(queue: Queue): Promise<void> {
    if (this.#ready.has(queue)) return;
    const name = queue.name;
    const limit = this.#connectTimeoutMs;
    const connected = queueHandle(queue).internals.backend.client;
    let timer: NodeJS.Timeout | undefined;
    try {
      await (limit === undefined
        ? connected
        : Promise.race([
            connected,
            new Promise((_, reject) => {
              timer = setTimeout(() => reject(new Error(`the connection of queue ${name} was not ready within ${limit} ms`)), limit);
            }),
          ]));
    } catch (error) {
      connected.catch(() => {
        if (this.#queues.get(name) === queue) this.#queues.delete(name);
        void queue.close().catch(ignoreError);
      });
      throw backendErrorFor(error, { written: false });
    } finally {
      clearTimeout(timer);
    }
    this.#ready.add(queue);
  }

  async enqueue(input: JobInput): Promise<EnqueueResult> {
    try {
      return await this.#enqueue(input);
    } catch (error) {
      // Typed errors pass through; a raw one (e.g. from registering a new queue) becomes a BackendError.
      throw typedErrorFor(error);
    }
  }

  /** An enqueue's BullMQ add: the queue, the job's options, its policy and key. */
  #plan(input: JobInput): EnqueuePlan {
    const queueName = input.queue ?? DEFAULT_QUEUE;
    // The queue is opened once the job has passed the core's checks (a bad queue name never reaches BullMQ).
    const added = ojsAddRequest(() => this.queue(queueName), input, {
      defaultMaxAttempts: this.#defaultMaxAttempts,
      backoff: this.#backoff,
      cancelledRetentionMs: this.#retentionMs,
      probe: this.#probe,
      countDuplicates: this.#countDuplicates,
      idClaimQueues: queueRegistryKey(`${this.prefix}:`),
    });
    return { input, queueName, queue: added.request.queue, ...added };
  }

  async #enqueue(input: JobInput): Promise<EnqueueResult> {
    const plan = this.#plan(input);
    const { queue, queueName, opts, prepared, request } = plan;
    try {
      await this.#whenReady(queue);
      // A plain enqueue with a generated id is BullMQ's own add.
      if (!prepared && request.idClaimQueues === undefined) {
        const job = await queue.add(input.type, input.args, opts);
        await queueHandle(this.queue(queueName)).register({ writeMeta: true });
        return { outcome: 'created', job: await this.#readBack(job.id!) };
      }
      return await this.#answer(plan, await this.#tracedAdd(plan));
    } catch (error) {
      throw backendErrorFor(error);
    }
  }

  /**
   * An add through unique-add in the span BullMQ's `queue.add` makes (a no-op without the queue's `telemetry`
   * option), with the outcome of a job that has a policy, and the trace context on the job as
   * BullMQ's add stores it. A deduplicated or rejected add's span names the existing job.
   */
  async #tracedAdd({ queue, input, prepared, request }: EnqueuePlan): Promise<UniqueAddReply> {
    return queue.trace(SpanKind.PRODUCER, 'add', `${queue.name}.${input.type}`, async (span, metadata) => {
      const named = (id: string, outcome: string) => ({
        [TelemetryAttributes.JobName]: input.type,
        [TelemetryAttributes.JobId]: id,
        ...(prepared ? { [OUTCOME_ATTRIBUTE]: outcome } : {}),
      });
      try {
        const reply = await uniqueAdd(metadata ? { ...request, opts: { ...request.opts, telemetry: { metadata } } } : request);
        span?.setAttributes(named(addedJobId(reply), reply.outcome));
        return reply;
      } catch (error) {
        if (isDuplicateJobError(error)) span?.setAttributes(named(error.existingJobId, 'rejected'));
        throw error;
      }
    });
  }

  /** The core's result for an add's reply (registering the queue after a write). */
  async #answer({ input, queueName, id, opts, prepared }: EnqueuePlan, reply: UniqueAddReply): Promise<EnqueueResult> {
    if (reply.outcome !== 'deduplicated' && reply.outcome !== 'updated')
      await queueHandle(this.queue(queueName)).register({ writeMeta: true });
    if (!prepared) return { outcome: 'created', job: await this.#readBack(id) };
    switch (reply.outcome) {
      case 'created':
        if (reply.report !== undefined) return { outcome: 'created', job: await this.#readBack(reply.job.id!), ...reply.report };
        return { outcome: 'created', job: this.#viewOfNew(queueName, reply.job.id!, input, reply.job.timestamp, prepared, opts) };
      case 'deduplicated': {
        const job = ojsJobView(reply.existing.queue, reply.existing.id, reply.existing.state, reply.existing.hash);
        return reply.successor === undefined
          ? { outcome: 'deduplicated', job }
          : { outcome: 'deduplicated', job, successor: { id: reply.successor } };
      }
      case 'updated':
        return {
          outcome: 'updated',
          job: ojsJobView(reply.existing.queue, reply.existing.id, reply.existing.state, reply.existing.hash),
          changed: reply.changed,
        };
      case 'replaced': {
        const [replaced, ...others] = reply.replaced.map((job) => ojsJobView(job.queue, job.id, job.state, job.hash));
        const job = await this.#readBack(reply.job.id!);
        return others.length > 0
          ? { outcome: 'replaced', job, replaced: replaced!, also_replaced: others }
          : { outcome: 'replaced', job, replaced: replaced! };
      }
    }
  }

  async enqueueMany(inputs: readonly JobInput[]): Promise<EnqueueResult[]> {
    try {
      return await this.#enqueueMany(inputs);
    } catch (error) {
      throw typedErrorFor(error);
    }
  }

  async #enqueueMany(inputs: readonly JobInput[]): Promise<EnqueueResult[]> {
    const plans = inputs.map((input, index) => {
      let plan: EnqueuePlan;
      try {
        plan = this.#plan(input);
      } catch (error) {
        throw underPath(error, `[${index}].`);
      }
      if (plan.prepared?.reportOnly) throw reportOnlyUnsupported(`[${index}].unique.x_report_only`, 'in enqueueMany on BullMQ');
      // The batch is one unique-flow script, whose all-or-nothing check pass does not keep a successor.
      if (plan.prepared?.policy.x_successor !== undefined)
        throw new InvalidJobInputError([{ path: `[${index}].unique.x_successor`, message: 'is not supported in enqueueMany on BullMQ' }]);
      return plan;
    });
    // Every job of a batch joins its queue to the id-claim set in the script (one by one, an
    // enqueue registers its queue after writing): a later job's id claim then sees it, as it would
    // have one by one.
    for (const plan of plans) plan.request.idClaimQueues = queueRegistryKey(`${this.prefix}:`);
    const seen = new Map<string, number>();
    plans.forEach(({ input }, index) => {
      if (input.id === undefined) return;
      if (seen.has(input.id))
        throw new InvalidJobInputError([{ path: `[${index}].id`, message: `job [${seen.get(input.id)}] of the batch has the same id` }]);
      seen.set(input.id, index);
    });
    if (plans.length === 0) return [];
    requireUniqueFlow(false, 'enqueueMany');
    for (const queue of new Set(plans.map((plan) => plan.queue))) await this.#whenReady(queue);
    // BullMQ's addBulk span for each queue of the batch, as one queue.addBulk per queue makes it.
    const spans = new BulkSpans(plans.map((plan) => ({ queue: plan.queue, name: plan.input.type })));
    let replies: UniqueAddReply[];
    try {
      replies = await this.#writeMany(plans, spans);
    } catch (error) {
      spans.end(undefined, error);
      throw error;
    }
    spans.end(replies.map((reply) => reply.outcome));
    const results: EnqueueResult[] = [];
    for (const [index, plan] of plans.entries()) results.push(await this.#answer(plan, replies[index]!));
    return results;
  }

  /** A batch in one unique-flow script, each job with its queue's span context (`spans`). */
  async #writeMany(plans: EnqueuePlan[], spans: BulkSpans): Promise<UniqueAddReply[]> {
    for (const plan of plans) {
      const metadata = spans.metadataOf(plan.queue);
      if (metadata) plan.request = { ...plan.request, opts: { ...plan.request.opts, telemetry: { metadata } } };
    }
    const adds: PreparedUniqueAdd[] = [];
    for (const [index, plan] of plans.entries()) {
      try {
        adds.push(await prepareUniqueAdd(plan.request));
      } catch (error) {
        throw underPath(error, `[${index}].`);
      }
    }
    // One unique-flow of nodes without a parent: every job checked before any is written.
    const nodes = adds.map((add, index) => uniqueNodeArgs(add, queueHandle(plans[index]!.queue).internals.keys['waiting-children']!));
    const reply = await runUniqueFlow(this.client, uniqueFlowArgs(queueHandle(plans[0]!.queue).internals.keys.meta!, nodes, []));
    switch (reply.answer) {
      case 'done':
        break;
      case 'refused': {
        const issue = flowRefusalIssue(reply.detail, `[${reply.node}].unique`, 'job of the batch');
        if (issue) throw new InvalidJobInputError([issue]);
        try {
          decodeUniqueAddReply(adds[reply.node]!, reply.detail);
        } catch (error) {
          throw underPath(error, `[${reply.node}].`);
        }
        throw new BackendError('bullmq', `unique-flow refused job [${reply.node}] without a refusal`, { written: false });
      }
      case 'failed':
        throw new BackendError(
          'bullmq',
          `enqueueMany: job [${reply.node}] failed while being written (jobs before it, if any, are written)`,
          {
            written: 'unknown',
          },
        );
      default:
        // Parents only: a batch has none.
        throw new BackendError('bullmq', `enqueueMany: unique-flow answered ${reply.answer}`, { written: false });
    }
    return adds.map((add, index) => decodeUniqueAddReply(add, reply.replies[index]));
  }

  async getJob(id: string): Promise<OjsJob | null> {
    if (!isJobId(id)) return null;
    try {
      for (const queueName of await this.#knownQueues()) {
        const base = queueBase(`${this.prefix}:`, queueName);
        const reply = (await runScript(this.client, COMMANDS.getJob, [
          `${base}${id}`,
          base,
          id,
          ...layoutArgs([queueLayoutKey(base)]),
        ])) as unknown[];
        if (reply[0] === 'found') {
          const due = reply[4] === '' ? undefined : Number(reply[4]);
          return ojsJobView(queueName, id, reply[1] as OjsJobState, pairs(reply[3]), due);
        }
      }
    } catch (error) {
      throw typedErrorFor(error, { written: false }); // a read
    }
    return null;
  }

  async getReplacedJobs(id: string): Promise<OjsJob[]> {
    const replacer = await this.getJob(id);
    if (!replacer) return [];
    const replaced = await readReplacedJobs(this.client, `${this.prefix}:`, replacer.queue, id);
    return replaced.map((job) => ojsJobView(job.queue, job.id, job.state, job.hash));
  }

  async findUniqueJob(target: JobInput | UniquenessKeyRef): Promise<OjsJob | null> {
    const { lookup, indexes } = await this.#lookupOf(target);
    const held = await findHeldJob(this.client, `${this.prefix}:`, indexes, lookup);
    return held ? ojsJobView(held.queue, held.id, held.state, held.hash) : null;
  }

  async explainUnique(job: JobInput): Promise<UniqueExplanation> {
    const prepared = prepareUnique(job, { extensions: BULLMQ_EXTENSIONS });
    if (!prepared) throw new InvalidJobInputError([{ path: 'unique', message: 'is required to name a uniqueness key' }]);
    const rootPrefix = `${this.prefix}:`;
    return explainKey(this.client, rootPrefix, indexKey(rootPrefix, job.queue ?? DEFAULT_QUEUE, prepared.policy), prepared);
  }

  async releaseUniqueKey(target: JobInput | UniquenessKeyRef): Promise<number> {
    const { lookup, indexes } = await this.#lookupOf(target);
    return releaseKey(this.client, `${this.prefix}:`, indexes, lookup.key);
  }

  /** A key named by a job (its policy's own index) or alone (the prefix's index and every known queue's). */
  async #lookupOf(target: JobInput | UniquenessKeyRef): Promise<{ lookup: KeyLookup; indexes: IndexKey[] }> {
    const rootPrefix = `${this.prefix}:`;
    if (isKeyRef(target)) {
      const lookup = keyRefLookup(target);
      let queues: string[];
      try {
        queues = await this.#knownQueues();
      } catch (error) {
        throw typedErrorFor(error, { written: false });
      }
      return { lookup, indexes: lookupIndexes(rootPrefix, queues, lookup) };
    }
    const prepared = prepareUnique(target, { extensions: BULLMQ_EXTENSIONS });
    if (!prepared) throw new InvalidJobInputError([{ path: 'unique', message: 'is required to name a uniqueness key' }]);
    const lookup = { key: prepared.key, policy: prepared.policy };
    return { lookup, indexes: lookupIndexes(rootPrefix, [target.queue ?? DEFAULT_QUEUE], lookup) };
  }

  async cancel(id: string): Promise<OjsJob> {
    if (!isJobId(id)) throw errorForReply({ code: 'not_found', jobId: id });
    let queues: string[];
    try {
      queues = await this.#knownQueues();
    } catch (error) {
      throw typedErrorFor(error, { written: false }); // nothing sent for the cancel yet
    }
    for (const queueName of queues) {
      const base = queueBase(`${this.prefix}:`, queueName);
      let reply: unknown[];
      try {
        reply = (await runScript(this.client, COMMANDS.cancelJob, [
          `${base}${id}`,
          `${base}events`,
          `${base}meta`,
          base,
          id,
          this.#retentionMs,
          indexKey(`${this.prefix}:`, queueName, { keys: ['queue'] }).key,
          ...layoutArgs([queueLayoutKey(base)]),
        ])) as unknown[];
      } catch (error) {
        throw typedErrorFor(error); // the cancel may have run
      }
      if (reply[0] === 'not_found') continue;
      if (reply[0] === 'terminal') throw errorForReply({ code: 'terminal', jobId: id, state: reply[1] as OjsJobState });
      if (reply[0] === 'cancelled') return ojsJobView(queueName, id, 'cancelled', pairs(reply[3]));
      throw errorForReply({ code: 'unknown', reply });
    }
    throw errorForReply({ code: 'not_found', jobId: id });
  }

  /** Closes the queues it opened and the client it created; settles during an outage too (the connection is then dropped). */
  async close(): Promise<void> {
    const closed = await Promise.allSettled([...this.#queues.values()].map((queue) => queue.close()));
    this.#queues.clear();
    if (this.#ownsClient) {
      try {
        await this.client.quit();
      } catch {
        this.client.disconnect();
      }
    }
    const failed = closed.find((result) => result.status === 'rejected');
    if (failed) throw backendErrorFor(failed.reason, { written: false });
  }

  /**
   * The job an add has just written, read back for its envelope. The add has succeeded by now, so
   * a failure here says so (`written: true`): the caller must not retry the add.
   */
  async #readBack(id: string): Promise<OjsJob> {
    let job: OjsJob | null;
    try {
      job = await this.getJob(id);
    } catch (error) {
      throw new BackendError('bullmq', `job ${id} was written, but reading it back failed`, { cause: error, written: true });
    }
    if (!job) throw new BackendError('bullmq', `job ${id} was written, but was removed before it could be read back`, { written: true });
    return job;
  }

  #viewOfNew(
    queue: string,
    id: string,
    input: JobInput,
    createdAt: number,
    prepared: { policy: OjsJob['unique']; key: string },
    opts: JobsOptions,
  ): OjsJob {
    return buildJobView({
      id,
      type: input.type,
      queue,
      args: structuredClone(input.args) as OjsJob['args'],
      meta: structuredClone(input.meta ?? {}) as OjsJob['meta'],
      state: (opts.delay ?? 0) > 0 ? 'scheduled' : 'available',
      attempt: 0,
      max_attempts: opts.attempts!,
      priority: input.priority ?? 0,
      created_at: createdAt,
      scheduled_at: createdAt + (opts.delay ?? 0),
      unique: prepared.policy,
      uniqueness_key: prepared.key,
    });
  }

  async #knownQueues(): Promise<string[]> {
    const stored = await this.client.smembers(queueRegistryKey(`${this.prefix}:`));
    return [...new Set([...this.#queues.keys(), ...stored])];
  }
}

function ignoreError(): void {}

/** The job an add's reply names: the one it wrote, or the duplicate it met. */
function addedJobId(reply: UniqueAddReply): string {
  return reply.outcome === 'created' || reply.outcome === 'replaced' ? reply.job.id! : reply.existing.id;
}

/** The `commandTimeout` a caller's client (or each node of a caller's Cluster) was given. */
function callerTimeout(client: Redis | Cluster): number | undefined {
  const options = client instanceof Cluster ? client.options.redisOptions : client.options;
  return typeof options?.commandTimeout === 'number' ? options.commandTimeout : undefined;
}

/**
 * Whether `id` can name a job. BullMQ refuses ":" in custom ids but for its own repeat ids
 * (`repeat:<key>:<millis>`, three parts); any other key with one under a queue's prefix is
 * BullMQ's (`<id>:lock` …) or this adapter's (`ojs:index`, `ojs:cancelled:<id>`).
 */
function isJobId(id: string): boolean {
  if (typeof id !== 'string' || id === '') return false;
  return !id.includes(':') || (id.split(':').length === 3 && !id.startsWith('ojs:'));
}
