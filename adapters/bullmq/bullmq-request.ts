/**
 * The request of one add, built once, before anything is sent: what `withUniqueness`'s `add`,
 * `addBulk` and flow nodes (`queueAddRequest`) and the backend (`ojsAddRequest`) pass to the
 * engine (bullmq-enqueue.ts). BullMQ's options merged with
 * the queue's defaults and checked as BullMQ would check them, the policy and key checked and
 * computed by the core, the keep options a policy needs, the caller's trace context.
 */
import type { JobsOptions, Queue } from 'bullmq';
import { InvalidJobInputError, isInvalidJobInputError, type ValidationIssue } from '../../src/errors.js';
import type { JobInput } from '../../src/job.js';
import { prepareUnique, scheduledAtMs, type PreparedUnique } from '../../src/unique-enqueue.js';
import { uuidv7 } from '../../src/uuid-v7.js';
import { BULLMQ_EXTENSIONS, bullmqExtensionIssues } from './bullmq-extensions.js';
import type { FlowParentKeyOpts } from './bullmq-host.js';
import { bullmqPriority } from './bullmq-job-view.js';
import { bullmqOptionIssues } from './bullmq-job-options.js';
import { queueHandle } from './bullmq-queue-handle.js';
import { keepOptionsFor, retentionIssues } from './bullmq-retention.js';
import type { UniqueJobsOptions } from './bullmq-types.js';
import type { UniqueAddRequest } from './bullmq-enqueue.js';
import { entryPointPolicy, NO_ENTRY_POINT_POLICIES, type EntryPointPolicies } from '../../src/registered-policies.js';
import { markReportOnly } from '../../src/report-only-mark.js';

/**
 * The policy an add of `name` through a wrapper runs with: the policy registered for `name` on
 * the wrapper (`policies`, src/registered-policies.ts: the add's own `unique` must be absent or
 * the same), else the add's own `unique` (a policy, or `null` for none), else the queue's
 * `defaultJobOptions.unique`. A plain add then carries `unique: undefined`, which BullMQ's
 * encoding skips, so the default is not stored on the job. The wrapper's `reportOnly` marks
 * whatever policy applies report-only.
 */
export function withDefaultPolicy(
  queue: Queue,
  opts: UniqueJobsOptions | undefined,
  wrapper: EntryPointPolicies = NO_ENTRY_POINT_POLICIES,
  name?: string,
  path = 'opts.unique',
): UniqueJobsOptions | undefined {
  if (wrapper.registry?.policyOf(name ?? '') !== undefined) {
    return { ...opts, unique: entryPointPolicy(wrapper, name!, opts === undefined || opts === null ? undefined : opts.unique, path) };
  }
  const effective = withQueueDefault(queue, opts);
  if (!wrapper.reportOnly || effective === undefined || effective === null) return effective;
  return { ...effective, unique: markReportOnly(effective.unique) };
}

function withQueueDefault(queue: Queue, opts: UniqueJobsOptions | undefined): UniqueJobsOptions | undefined {
  const fallback = queueHandle(queue).defaultPolicy();
  if (fallback === undefined || fallback === null) return opts;
  if (opts !== undefined && opts !== null && opts.unique !== undefined) return opts.unique === null ? { ...opts, unique: undefined } : opts;
  return { ...opts, unique: fallback };
}

/** Options that ask for a policy: `unique: null` (like `undefined`) means none, a plain add. */
export function hasPolicy(opts: UniqueJobsOptions | undefined): boolean {
  return opts !== undefined && opts !== null && ((opts.unique !== undefined && opts.unique !== null) || opts.ojsMeta !== undefined);
}

/** `opts` without a `unique: null`, so that a plain add stores exactly what BullMQ alone would. */
export function plainOpts(opts: UniqueJobsOptions | undefined, queue?: Queue): JobsOptions | undefined {
  if (opts === undefined || opts === null || !('unique' in opts)) return opts;
  const { unique: _none, ...rest } = opts;
  // Over a default policy, `unique: undefined` stops BullMQ's merge from bringing it back.
  const fallback = queue && queueHandle(queue).defaultPolicy();
  return fallback === undefined || fallback === null ? rest : ({ ...rest, unique: undefined } as JobsOptions);
}

/**
 * Validates everything before anything is sent. BullMQ options that would fight the policy are
 * refused rather than silently combined:
 *  - `deduplication` (and the removed `debounce`): a second deduplication mechanism that can
 *    swallow the add before the policy is checked.
 *  - `parent`: a flow node's (with-unique-flows.ts inserts it with its parent, `flowNode`).
 *  - `repeat`: scheduler-made jobs are created by BullMQ's scheduler, not by this add.
 * `jobId` is allowed: the new job gets it; if a job with that id exists (any state), the add is
 * refused with `InvalidJobInputError` (BullMQ itself would silently return the old job).
 */
export function queueAddRequest(
  queue: Queue,
  name: string,
  data: unknown,
  opts: UniqueJobsOptions,
  retentionMs: number,
  how: { flowNode?: boolean; probe?: boolean; parentKeyOpts?: FlowParentKeyOpts; countDuplicates?: boolean } = {},
): UniqueAddRequest & { prepared: PreparedUnique } {
  const { unique, ojsMeta, ...bullmqOpts } = opts;
  // Merged first, as Queue.addJob merges them: an option set in the queue's defaultJobOptions
  // fights the policy just as much as one given on the add.
  const { unique: _default, ...defaults } = queueHandle(queue).internals.jobsOpts as UniqueJobsOptions;
  const merged: JobsOptions = { ...defaults, ...bullmqOpts, jobId: bullmqOpts.jobId };
  const issues: ValidationIssue[] = [];
  for (const option of ['deduplication', 'debounce', 'parent', 'repeat'] as const) {
    // BullMQ refuses a `debounce` key even when undefined (Job#validateOptions).
    if (option === 'parent' && how.flowNode === true) continue;
    if ((merged as Record<string, unknown>)[option] !== undefined || (option === 'debounce' && Object.hasOwn(merged, option))) {
      issues.push({
        path: `opts.${option}`,
        message: `cannot be combined with unique (see docs/bullmq.md, "Combining with BullMQ options")`,
      });
    }
  }
  if (unique === undefined || unique === null)
    issues.push({ path: 'opts.unique', message: 'ojsMeta is only used by a unique policy; give one' });
  issues.push(...bullmqOptionIssues(merged, data));
  if (issues.length > 0) throw new InvalidJobInputError(issues);

  // The job id goes through the core's identifier rules too, so one logical job gets one answer on
  // every entry point; the issue then names the option the caller set.
  let prepared: PreparedUnique;
  try {
    prepared = prepareUnique(
      {
        type: name,
        queue: queue.name,
        id: merged.jobId,
        args: data,
        meta: ojsMeta === undefined ? {} : ojsMeta,
        unique,
      },
      { extensions: BULLMQ_EXTENSIONS },
    )!;
  } catch (error) {
    if (!isInvalidJobInputError(error)) throw error;
    throw new InvalidJobInputError(error.issues.map((issue) => (issue.path === 'id' ? { ...issue, path: 'opts.jobId' } : issue)));
  }
  const retention = [...bullmqExtensionIssues(prepared.policy, how.flowNode === true), ...retentionIssues(prepared.policy, merged)];
  if (retention.length > 0) throw new InvalidJobInputError(retention);
  // An explicit keep option on the job, so a Worker's removeOnComplete/removeOnFail cannot apply.
  Object.assign(merged, keepOptionsFor(prepared.policy, merged));
  return {
    queue,
    name,
    data,
    opts: merged,
    prepared,
    meta: ojsMeta ?? {},
    cancelledRetentionMs: retentionMs,
    idPath: 'opts.jobId',
    bullmqOptionsChecked: true,
    probe: how.probe,
    parentKeyOpts: how.parentKeyOpts,
    countDuplicates: how.countDuplicates,
  };
}

/** The caller's trace context on a job's options, as BullMQ's add puts it (unless `telemetry.omitContext`). */
export function withTraceContext(opts: UniqueJobsOptions, context: string | undefined): UniqueJobsOptions {
  if (!context || opts.telemetry?.omitContext || opts.telemetry?.metadata) return opts;
  return { ...opts, telemetry: { ...opts.telemetry, metadata: context } };
}

/** An OJS job's add (the backend's enqueue): its BullMQ options and id, its policy and key, the request. */
export interface OjsAddRequest {
  id: string;
  opts: JobsOptions;
  prepared: PreparedUnique | null;
  request: UniqueAddRequest;
}

/**
 * The request of an OJS job's add on the queue `queueOf` opens, after the core's checks of the whole job, its id (a
 * caller's, or a new UUIDv7), `scheduled_at` as BullMQ's delay, its priority, attempts and
 * backoff, the keep options its policy needs.
 */
export function ojsAddRequest(
  queueOf: () => Queue,
  input: JobInput,
  settings: {
    defaultMaxAttempts: number;
    backoff: JobsOptions['backoff'];
    cancelledRetentionMs: number;
    probe: boolean;
    countDuplicates: boolean;
    /** The prefix's queue set, where a caller-chosen id is claimed. */
    idClaimQueues: string;
  },
): OjsAddRequest {
  // The core's rules cover BullMQ's own for ids (no integer string, no ':').
  const prepared = prepareUnique(input, { extensions: BULLMQ_EXTENSIONS });
  const id = input.id ?? uuidv7();
  const scheduledAt = input.scheduled_at === undefined ? null : scheduledAtMs(input.scheduled_at)!;
  const opts: JobsOptions = {
    jobId: id,
    attempts: input.max_attempts ?? settings.defaultMaxAttempts,
    backoff: settings.backoff,
  };
  // scheduled_at is an absolute time chosen by the producer; the delay BullMQ stores is
  // relative to the job's timestamp, which a unique add sets to Redis TIME.
  if (scheduledAt !== null && scheduledAt > Date.now()) opts.delay = scheduledAt - Date.now();
  const priority = bullmqPriority(input.priority);
  if (priority !== undefined) opts.priority = priority;
  // A Worker's removeOnComplete/removeOnFail must not delete a job its policy still counts.
  if (prepared) Object.assign(opts, keepOptionsFor(prepared.policy, opts));
  const request: UniqueAddRequest = {
    queue: queueOf(),
    name: input.type,
    data: input.args,
    opts,
    prepared,
    meta: input.meta ?? {},
    cancelledRetentionMs: settings.cancelledRetentionMs,
    // A caller-chosen id must be new in every queue (as on the memory backend), claimed in the
    // script that inserts (with or without a policy), so concurrent enqueues of one id cannot
    // both pass. A generated UUIDv7 cannot collide.
    idClaimQueues: input.id === undefined ? undefined : settings.idClaimQueues,
    probe: settings.probe,
    countDuplicates: settings.countDuplicates,
  };
  return { id, opts, prepared, request };
}
