/**
 * `withUniqueness(queue)`: an existing BullMQ `Queue` whose `add`/`addBulk` also accept an OJS
 * `unique` policy. Everything else is the queue itself.
 *
 * An add without `unique` goes straight to the queue's own method, untouched: same ids, same
 * events, same keys, byte for byte (test/adapters/bullmq-plain-add.test.ts).
 *
 * OJS mapping (docs/bullmq.md): job name -> `type`, the queue's name -> `queue`, `data` -> `args`,
 * `opts.ojsMeta` -> `meta` (BullMQ jobs have none; kept apart so `data` is never altered),
 * `delay` -> `scheduled_at`, `attempts` -> `max_attempts`.
 */
import { FlowProducer, Queue, SpanKind, TelemetryAttributes, type Job } from 'bullmq';
import {
  addUniqueFlow,
  prepareUniqueFlow,
  wrapFlowProducer,
  type PreparedUniqueFlow,
  type UniqueFlowProducer,
} from './with-unique-flows.js';
import { readUniqueFlowReply } from './bullmq-unique-flow.js';
import { relayTemplate } from './unique-job-schedulers.js';
import { InvalidJobInputError, isDuplicateJobError, isInvalidJobInputError } from '../../src/errors.js';
import { prepareUnique, type PreparedUnique } from '../../src/unique-enqueue.js';
import type { UniqueExplanation } from '../../src/unique-explain.js';
import { BULLMQ_EXTENSIONS } from './bullmq-extensions.js';
import { backendErrorFor, typedErrorFor } from './bullmq-errors.js';
import { OUTCOME_ATTRIBUTE, outcomeAttribute } from './bullmq-telemetry.js';
import { jobFromHash, validateJobOptions } from './bullmq-host.js';
import { jobForReply, notAdded } from './bullmq-job-view.js';
import { queueHandle } from './bullmq-queue-handle.js';
import { hasPolicy, plainOpts, queueAddRequest, withDefaultPolicy, withTraceContext } from './bullmq-request.js';
import { entryPointPolicies } from '../../src/registered-policies.js';
import { composedScripts } from './bullmq-script-set.js';
import { archiveKey, globLiteral, indexKey } from './bullmq-sidecar-keys.js';
import { isKeyRef, keyRefLookup, type KeyLookup } from '../../src/key-lookup.js';
import { dropQueueEntries, explainKey, findHeldJob, lookupIndexes, readReplacedJobs, releaseKey } from './bullmq-lookups.js';
import { deleteMatching } from './remove-uniqueness-index.js';
import { DEFAULT_CANCELLED_RETENTION_MS } from './bullmq-retention.js';
import type { FlowNodeSeam } from './with-unique-flows.js';
import type {
  AddedJob,
  AddOutcomeKind,
  BulkAddedJob,
  FoundJob,
  NameOf,
  PlainJob,
  UniqueJob,
  UniqueJobsOptions,
  UniqueQueue,
  UniqueSchedulerTemplateOptions,
  WithUniquenessOptions,
} from './bullmq-types.js';
import { decodeUniqueAddReply, prepareUniqueAdd, sendBulk, uniqueAdd, type PreparedUniqueAdd } from './bullmq-enqueue.js';
import { reportOnlyAnswer } from './bullmq-report-only.js';
import { reportOnlyShadow, reportOnlyUnsupported } from '../../src/report-only.js';

/**
 * Wraps a `Queue` (its `add`/`addBulk` accept `unique`), or a `FlowProducer` (any node without
 * children may carry `unique`; with-unique-flows.ts).
 */
export function withUniqueness<Q extends Queue>(queue: Q, options?: WithUniquenessOptions<NameOf<Q>>): UniqueQueue<Q>;
export function withUniqueness<F extends FlowProducer>(flowProducer: F, options?: WithUniquenessOptions): UniqueFlowProducer<F>;
export function withUniqueness(target: Queue | FlowProducer, options: WithUniquenessOptions = {}): unknown {
  if (target instanceof FlowProducer)
    return wrapFlowProducer(target, options, (queue, opts) => wrapQueue(queue, opts) as UniqueQueue, flowSeamOf);
  return wrapQueue(target, options);
}

const flowSeams = new WeakMap<object, FlowNodeSeam>();

function flowSeamOf(wrapped: UniqueQueue): FlowNodeSeam {
  const seam = flowSeams.get(wrapped);
  if (!seam) throw new Error('not a queue wrapped by withUniqueness');
  return seam;
}

function wrapQueue<Q extends Queue>(queue: Q, options: WithUniquenessOptions = {}): UniqueQueue<Q> {
  // Fail now, not at the first unique add: on a non-Redis backend, or a BullMQ whose add scripts
  // are not what unique-add splices in.
  const handle = queueHandle(queue);
  const internals = handle.internals;
  composedScripts();
  const retentionMs = options.cancelledRetentionMs ?? DEFAULT_CANCELLED_RETENTION_MS;
  const probe = options.duplicateProbe ?? true;
  const countDuplicates = options.countDuplicates ?? false;
  const policies = entryPointPolicies(options);
  const siblings = new Siblings(queue, options);
  // Assigned below; every closure here runs after the Proxy exists.
  let wrapper!: UniqueQueue<Q>;

  // A Job the wrapper hands out refers to the wrapper, so `job.queue.add(…, { unique })` keeps
  // the policy. Only jobs of the wrapped queue object are relinked (never the user's queue itself).
  const relink = <T>(value: T): T => {
    if (value instanceof internals.Job && (value as unknown as { queue: unknown }).queue === queue) {
      (value as unknown as { queue: unknown }).queue = wrapper;
    } else if (Array.isArray(value)) {
      for (const item of value) relink(item);
    }
    return value;
  };

  const add = async (name: string, data: unknown, given?: UniqueJobsOptions): Promise<AddedJob> => {
    const opts = withDefaultPolicy(queue, given, policies, name);
    if (!hasPolicy(opts))
      return relink((await queue.add(name, data as never, plainOpts(opts, queue) as never)) as PlainJob<any, any, string>);
    // BullMQ's producer span, as its own add makes it (a no-op without the queue's `telemetry`
    // option), with the outcome: the trace context goes onto the job, so its worker's span joins
    // the caller's trace; a deduplicated add's span names the existing job.
    return (await queue.trace(SpanKind.PRODUCER, 'add', `${queue.name}.${name}`, async (span, context) => {
      try {
        const job = await addUnique(name, data, withTraceContext(opts!, context));
        span?.setAttributes({ [TelemetryAttributes.JobName]: name, [TelemetryAttributes.JobId]: job.id!, ...outcomeAttribute(job) });
        return job;
      } catch (error) {
        // (BullMQ's trace records the exception: the DuplicateJobError's message names no key.)
        if (isDuplicateJobError(error)) {
          span?.setAttributes({
            [TelemetryAttributes.JobName]: name,
            [TelemetryAttributes.JobId]: error.existingJobId,
            [OUTCOME_ATTRIBUTE]: 'rejected',
          });
        }
        throw error;
      }
    })) as AddedJob;
  };

  const addUnique = async (name: string, data: unknown, opts: UniqueJobsOptions): Promise<AddedJob> => {
    // A child of an existing parent: inserted with its dependency bookkeeping by unique-flow, as
    // a one-node flow (with-unique-flows.ts), with the counter id queue.add would give it.
    if (opts.parent !== undefined) {
      const node = await addUniqueFlow({ name, queueName: queue.name, data, opts: opts as never }, undefined, '', {
        queueOf: () => wrapper as unknown as UniqueQueue,
        seamOf: flowSeamOf,
        counterRootId: true,
      });
      const job = node.job as UniqueJob<any, any, string, AddOutcomeKind>;
      if (job.unique.outcome === 'created' || job.unique.outcome === 'replaced') queue.emit('waiting', job as never);
      return job;
    }
    // A unique add throws only the core's typed errors (a plain add above stays BullMQ's own).
    try {
      const request = queueAddRequest(queue, name, data, opts, retentionMs, { probe, countDuplicates });
      const reply = await uniqueAdd(request);
      const inserted = reply.outcome === 'created' || reply.outcome === 'replaced';
      if (!handle.registered && inserted) await handle.register();
      const job = jobForReply(siblings.queueOf, reply, request.prepared);
      if (inserted) queue.emit('waiting', relink(job) as never);
      return relink(job);
    } catch (error) {
      // A duplicate (the common refusal) is already the typed error to throw.
      throw isDuplicateJobError(error) ? error : typedErrorFor(error);
    }
  };

  const addBulk = async (given: readonly { name: string; data: unknown; opts?: UniqueJobsOptions }[]): Promise<BulkAddedJob[]> => {
    const jobs = given.map((job, index) => {
      const opts = withDefaultPolicy(queue, job.opts, policies, job.name, `[${index}].opts.unique`);
      return opts === job.opts ? job : { ...job, opts };
    });
    if (!jobs.some((job) => hasPolicy(job.opts))) {
      const plain = jobs.some((job) => job.opts != null && 'unique' in job.opts)
        ? jobs.map((job) => ({ ...job, opts: plainOpts(job.opts, queue) }))
        : jobs;
      return relink((await queue.addBulk(plain as never)) as PlainJob<any, any, string>[]);
    }
    // BullMQ's addBulk span, and the trace context on every job, as its own addBulk does.
    return (await queue.trace(SpanKind.PRODUCER, 'addBulk', queue.name, async (span, context) => {
      span?.setAttributes({ [TelemetryAttributes.BulkNames]: jobs.map((job) => job.name), [TelemetryAttributes.BulkCount]: jobs.length });
      try {
        const added = await uniqueAddBulk(
          siblings,
          context ? jobs.map((job) => ({ ...job, opts: withTraceContext(job.opts ?? {}, context) })) : jobs,
          retentionMs,
          countDuplicates,
        );
        // Each job's outcome, in the order of BullMQ's bulk names (a job without a policy was created).
        span?.setAttributes({ [OUTCOME_ATTRIBUTE]: added.map((job) => job.unique?.outcome ?? 'created') });
        return relink(added);
      } catch (error) {
        throw typedErrorFor(error);
      }
    })) as BulkAddedJob[];
  };

  const close = async (): Promise<void> => {
    await siblings.close();
    await queue.close();
  };

  const lookupOf = (
    target: unknown,
    data: unknown,
    opts: UniqueJobsOptions | undefined,
  ): { lookup: KeyLookup; indexes: ReturnType<typeof lookupIndexes> } => {
    const rootPrefix = handle.rootPrefix;
    if (isKeyRef(target)) {
      const lookup = keyRefLookup(target);
      return { lookup, indexes: lookupIndexes(rootPrefix, [queue.name], lookup) };
    }
    const { lookup } = preparedOf(target, data, opts);
    return { lookup, indexes: lookupIndexes(rootPrefix, [queue.name], lookup) };
  };

  /** A job named as `add` takes it, with the queue's default policy: its key, pre-image and policy. */
  const preparedOf = (
    name: unknown,
    data: unknown,
    opts: UniqueJobsOptions | undefined,
  ): { prepared: PreparedUnique; lookup: KeyLookup } => {
    const effective = withDefaultPolicy(queue, opts, policies, name as string) ?? {};
    if (effective.unique === undefined || effective.unique === null)
      throw new InvalidJobInputError([{ path: 'opts.unique', message: 'is required to name a uniqueness key' }]);
    const prepared = prepareUnique(
      {
        type: name as string,
        queue: queue.name,
        args: data,
        meta: effective.ojsMeta ?? {},
        unique: effective.unique,
      },
      { extensions: BULLMQ_EXTENSIONS },
    )!;
    return { prepared, lookup: { key: prepared.key, policy: prepared.policy } };
  };

  const findUniqueJob = async (target: unknown, data?: unknown, opts?: UniqueJobsOptions): Promise<FoundJob | null> => {
    const { lookup, indexes } = lookupOf(target, data, opts);
    const held = await findHeldJob(await handle.client(), handle.rootPrefix, indexes, lookup);
    if (!held) return null;
    return Object.assign(relink(jobFromHash(siblings.of(held.queue), held.id, held.hash)), { ojsState: held.state });
  };

  const getReplacedJobs = async (jobId: string): Promise<FoundJob[]> => {
    const replaced = await readReplacedJobs(await handle.client(), handle.rootPrefix, queue.name, jobId);
    return replaced.map((job) => Object.assign(relink(jobFromHash(siblings.of(job.queue), job.id, job.hash)), { ojsState: job.state }));
  };

  const explainUnique = async (name: unknown, data?: unknown, opts?: UniqueJobsOptions): Promise<UniqueExplanation> => {
    const { prepared } = preparedOf(name, data, opts);
    return explainKey(await handle.client(), handle.rootPrefix, indexKey(handle.rootPrefix, queue.name, prepared.policy), prepared);
  };

  const releaseUniqueKey = async (target: unknown, data?: unknown, opts?: UniqueJobsOptions): Promise<number> => {
    const { lookup, indexes } = lookupOf(target, data, opts);
    return releaseKey(await handle.client(), handle.rootPrefix, indexes, lookup.key);
  };

  const upsertJobScheduler = async (
    schedulerId: string,
    repeatOpts: Parameters<Queue['upsertJobScheduler']>[1],
    template?: { name?: string; data?: unknown; opts?: UniqueSchedulerTemplateOptions },
  ): Promise<Job> => {
    const opts = withDefaultPolicy(
      queue,
      template?.opts as UniqueJobsOptions | undefined,
      policies,
      template?.name ?? schedulerId,
      'jobTemplate.opts.unique',
    );
    if (!hasPolicy(opts)) {
      const plain = template && { ...template, opts: plainOpts(opts, queue) as never };
      return relink(await queue.upsertJobScheduler(schedulerId as never, repeatOpts, plain as never));
    }
    let relay: ReturnType<typeof relayTemplate>;
    try {
      relay = relayTemplate(queue.name, { ...template, opts }, schedulerId, opts!.unique!);
    } catch (error) {
      if (!isInvalidJobInputError(error)) throw error;
      throw new InvalidJobInputError(
        error.issues.map((issue) => ({
          ...issue,
          path: `jobTemplate.${issue.path === 'unique' || issue.path.startsWith('unique.') ? `opts.${issue.path}` : issue.path}`,
        })),
      );
    }
    // The queue's default policy must not ride into the relay's own options (BullMQ merges them).
    return relink(
      await queue.upsertJobScheduler(schedulerId as never, repeatOpts, {
        ...relay,
        opts: plainOpts({ ...relay.opts, unique: null }, queue),
      } as never),
    );
  };

  // BullMQ's obliterate first: when it refuses (active jobs without `force`), nothing of ours is
  // touched. Then the sidecar: the queue's own keys (index, archives), and its entries in the
  // indexes it shares (the prefix's; its NFC twin's per-queue index), never other queues' entries.
  const obliterate = async (opts?: Parameters<Queue['obliterate']>[0]): Promise<void> => {
    await queue.obliterate(opts);
    try {
      const client = await handle.client();
      const rootPrefix = handle.rootPrefix;
      // The per-queue index is shared with a queue whose name has the same NFC form: drop
      // entries rather than the key (a hash left with no field is gone).
      await dropQueueEntries(client, rootPrefix, indexKey(rootPrefix, queue.name, { keys: ['queue'] } as never), queue.name);
      await dropQueueEntries(client, rootPrefix, { key: `${rootPrefix}ojs:global:index`, home: '' }, queue.name);
      await deleteMatching(queue, [`${globLiteral(archiveKey(handle.base, ''))}*`]);
    } catch (error) {
      throw typedErrorFor(error);
    }
  };

  // Bound once per method (stable identity: `q.getJob === q.getJob`), on the wrapped queue so
  // BullMQ's own code never runs with the Proxy as `this`. A call that returns the queue returns
  // the wrapper; Jobs it returns (getJob, getJobs …) are relinked.
  const own = new Map<PropertyKey, unknown>([
    ['add', add],
    ['addBulk', addBulk],
    ['close', close],
    ['findUniqueJob', findUniqueJob],
    ['releaseUniqueKey', releaseUniqueKey],
    ['explainUnique', explainUnique],
    ['getReplacedJobs', getReplacedJobs],
    ['obliterate', obliterate],
    ['upsertJobScheduler', upsertJobScheduler],
  ]);
  const bound = new Map<PropertyKey, { source: (...args: unknown[]) => unknown; fn: (...args: unknown[]) => unknown }>();
  const settle = (result: unknown): unknown => {
    if (result === queue) return wrapper;
    if (result instanceof Promise) return result.then(relink);
    return relink(result);
  };
  wrapper = new Proxy(queue, {
    get(target, property) {
      const mine = own.get(property);
      if (mine !== undefined) return mine;
      if (property === 'unwrapped') return target;
      const value = Reflect.get(target, property, target) as unknown;
      if (typeof value !== 'function') return value;
      const cached = bound.get(property);
      if (cached?.source === value) return cached.fn;
      const source = value as (...args: unknown[]) => unknown;
      const fn = (...args: unknown[]): unknown => settle(source.apply(target, args));
      bound.set(property, { source, fn });
      return fn;
    },
  }) as unknown as UniqueQueue<Q>;
  siblings.bind(wrapper as unknown as Queue);
  flowSeams.set(wrapper, {
    prepare: (name, data, opts, parentKeyOpts) => {
      const request = queueAddRequest(queue, name, data, withDefaultPolicy(queue, opts, policies, name) ?? opts, retentionMs, {
        flowNode: true,
        parentKeyOpts,
        countDuplicates,
      });
      // A flow's nodes go in all or nothing, in one script: a report-only node's plain insert
      // would be a second one (a lone root is the queue's add, which supports it).
      if (request.prepared.reportOnly) throw reportOnlyUnsupported('opts.unique.x_report_only', 'on a flow node with a parent or siblings');
      return prepareUniqueAdd(request);
    },
    jobFor: (prepared, reply) => relink(jobForReply(siblings.queueOf, decodeUniqueAddReply(prepared, reply), prepared.request.prepared!)),
    register: () => handle.register(),
  });
  return wrapper;
}

function ignoreError(): void {}

/**
 * The other queues of the same prefix, for jobs found by a policy without the `queue` dimension:
 * a deduplicated add returns the existing job bound to ITS queue, so `job.remove()` and friends
 * act on the right keys. Opened with the wrapped queue's own options on first need and closed
 * with it.
 */
class Siblings {
  readonly #queue: Queue;
  readonly #options: WithUniquenessOptions;
  readonly #opened = new Map<string, Queue>();
  #wrapper: Queue | undefined;

  constructor(queue: Queue, options: WithUniquenessOptions) {
    this.#queue = queue;
    this.#options = options;
  }

  get queue(): Queue {
    return this.#queue;
  }

  /** The wrapper of `queue`, which jobs of this queue are bound to. */
  bind(wrapper: Queue): void {
    this.#wrapper = wrapper;
  }

  /** `of`, bound: for the job view. */
  readonly queueOf = (name: string): Queue => this.of(name);

  /** The queue a job of queue `name` is bound to: this wrapper, or a wrapped sibling the library opened. */
  of(name: string): Queue {
    if (name === this.#queue.name) return this.#wrapper ?? this.#queue;
    let sibling = this.#opened.get(name);
    if (!sibling) {
      const opened = new Queue(name, this.#queue.opts);
      // The library's own queue: its connection errors reach the caller as typed errors of the
      // calls that meet them; without a listener BullMQ would print them (the library logs nothing).
      opened.on('error', ignoreError);
      sibling = withUniqueness(opened, this.#options) as unknown as Queue;
      this.#opened.set(name, sibling);
    }
    return sibling;
  }

  async close(): Promise<void> {
    await Promise.all([...this.#opened.values()].map((queue) => queue.close()));
    this.#opened.clear();
  }
}

/**
 * addBulk with unique jobs: one pipeline, in order, like BullMQ's own addBulk (the engine's
 * `sendBulk`: each add atomic on its own, the batch not a transaction).
 *
 * Every job is validated before anything is sent, and an invalid one refuses the whole batch:
 * the policy and options, and a unique job's `jobId` (taken by an earlier job of the batch, or by
 * a job or cancelled archive already in the queue). Once the pipeline has run, an entry that
 * was not added comes back with `unique.outcome: 'rejected'` and the typed error a single `add`
 * would have thrown (`DuplicateJobError`; `InvalidJobInputError` for a `jobId` taken
 * meanwhile by a concurrent add; `BackendError`), because other entries may have been written.
 * Only when no entry was written is an error other than a duplicate thrown (e.g. `BackendError`
 * on a lost connection), as a single add would throw it.
 */
async function uniqueAddBulk(
  siblings: Siblings,
  jobs: readonly { name: string; data: unknown; opts?: UniqueJobsOptions }[],
  retentionMs: number,
  countDuplicates: boolean,
): Promise<BulkAddedJob[]> {
  const queue = siblings.queue;
  const handle = queueHandle(queue);
  const internals = handle.internals;
  type Entry =
    | { kind: 'unique'; prepared: PreparedUniqueAdd; real: PreparedUnique }
    | { kind: 'child'; flow: PreparedUniqueFlow; jobId: string | undefined }
    | { kind: 'plain'; job: Job };
  const entries: Entry[] = [];
  for (const [index, spec] of jobs.entries()) {
    if (!hasPolicy(spec.opts)) {
      const opts = { ...internals.jobsOpts, ...plainOpts(spec.opts, queue), jobId: spec.opts?.jobId };
      const job = new internals.Job(queue, spec.name, spec.data, opts, opts.jobId);
      try {
        validateJobOptions(job);
      } catch (error) {
        // BullMQ's own check of a plain entry, refused before anything of the batch is sent.
        throw new InvalidJobInputError([{ path: `[${index}].opts`, message: error instanceof Error ? error.message : String(error) }], {
          cause: error,
        });
      }
      entries.push({ kind: 'plain', job });
    } else if (spec.opts?.parent !== undefined) {
      // A child of an existing parent: a one-node unique-flow, as `add` sends it.
      const flow = await prepareUniqueFlow(
        { name: spec.name, queueName: queue.name, data: spec.data, opts: spec.opts as never },
        undefined,
        `[${index}].`,
        {
          queueOf: () => siblings.of(queue.name) as unknown as UniqueQueue,
          seamOf: flowSeamOf,
          counterRootId: true,
        },
      );
      entries.push({ kind: 'child', flow, jobId: spec.opts.jobId });
    } else {
      const request = queueAddRequest(queue, spec.name, spec.data, spec.opts ?? {}, retentionMs, { countDuplicates });
      // A report-only entry is sent as its shadow; a duplicate there is added plain after the pipeline.
      const real = request.prepared;
      entries.push({
        kind: 'unique',
        prepared: await prepareUniqueAdd(real.reportOnly ? { ...request, prepared: reportOnlyShadow(real) } : request),
        real,
      });
    }
  }

  const results = await sendBulk(handle, entries);

  const outcomes: BulkAddedJob[] = [];
  for (const [index, entry] of entries.entries()) outcomes.push(await outcomeOf(entry, index));
  async function outcomeOf(entry: Entry, index: number): Promise<BulkAddedJob> {
    const [error, reply] = results[index]!;
    if (entry.kind === 'plain') {
      if (error) return notAdded(entry.job, '', backendErrorFor(error));
      entry.job.id = String(reply);
      return entry.job;
    }
    if (entry.kind === 'child') {
      try {
        if (error) throw error;
        const job = entry.flow.answer(readUniqueFlowReply(reply)).job as UniqueJob;
        if (job.unique.outcome === 'created' || job.unique.outcome === 'replaced') queue.emit('waiting', job as never);
        return job;
      } catch (failure) {
        return notAdded(entry.flow.root.job, entry.flow.root.uniquenessKey, backendErrorFor(failure));
      }
    }
    try {
      if (error) throw error;
      let decoded = decodeUniqueAddReply(entry.prepared, reply);
      if (entry.real.reportOnly) decoded = await reportOnlyAnswer(entry.prepared.request, entry.real, decoded, uniqueAdd);
      const job = jobForReply(siblings.queueOf, decoded, entry.real);
      if (job.unique?.outcome === 'created' || job.unique?.outcome === 'replaced') queue.emit('waiting', job as never);
      return job;
    } catch (failure) {
      return notAdded(entry.prepared.job, entry.real.key, backendErrorFor(failure));
    }
  }
  const written = outcomes.some(
    (job) =>
      job.unique === undefined || job.unique.outcome === 'created' || job.unique.outcome === 'replaced' || job.unique.outcome === 'updated',
  );
  if (written) await handle.register();
  const failure = outcomes.find((job) => job.unique?.error !== undefined && !isDuplicateJobError(job.unique.error));
  if (!written && failure) throw failure.unique!.error;
  return outcomes;
}
