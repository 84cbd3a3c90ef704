/**
 * The public types of `withUniqueness(queue)` (with-uniqueness.ts): the options an add takes, the
 * outcome on the job it returns, and the wrapped queue's type, typed like BullMQ's own `Queue`.
 */
import type { Job, JobsOptions, Queue, QueueOptions } from 'bullmq';
import type { OjsUniqueError } from '../../src/errors.js';
import type { OjsJob } from '../../src/job.js';
import type { OjsJobState } from '../../src/job-state.js';
import type { UniquePolicyInput, UpdateField } from '../../src/unique-policy.js';
import type { UniquenessKeyRef } from '../../src/key-lookup.js';
import type { UniqueExplanation } from '../../src/unique-explain.js';
import type { EntryPointPolicyOptions } from '../../src/registered-policies.js';
import type { WouldBe } from '../../src/report-only.js';

export interface UniqueJobsOptions extends JobsOptions {
  /**
   * An OJS `UniquePolicy` (spec §2), validated at add. `null` is none, also over a default.
   * (Default: the queue's `defaultJobOptions.unique`, else none: a plain BullMQ add.)
   */
  unique?: UniquePolicyInput | null;
  /** OJS `meta` for the policy's `meta` dimension; stored beside the job, never in `data`. (Default: `{}`.) */
  ojsMeta?: Record<string, unknown>;
}

/**
 * Queue options whose `defaultJobOptions` may carry a `unique` policy: every add through
 * `withUniqueness(queue)` that does not say `unique` gets it; `unique: null` opts an add out, a
 * policy of its own replaces it (wholly, never merged). Type the options with it, since BullMQ's
 * `QueueOptions` does not know `unique`: `const opts: UniqueQueueOptions = {…}; new Queue(name, opts)`.
 * `queue.add` on the unwrapped queue ignores the policy (BullMQ stores it among the job's options).
 */
export interface UniqueQueueOptions extends QueueOptions {
  defaultJobOptions?: UniqueJobsOptions;
}

/** A scheduler template's options: BullMQ's, plus `unique` / `ojsMeta` for each job it makes. */
export type UniqueSchedulerTemplateOptions = NonNullable<NonNullable<Parameters<Queue['upsertJobScheduler']>[2]>['opts']> &
  Pick<UniqueJobsOptions, 'unique' | 'ojsMeta'>;

/**
 * What a unique add did, on the returned job, without another round trip. `UniqueOutcome<'replaced'>`
 * is one kind; the default is any of them.
 *  - `created`: inserted.
 *  - `deduplicated`: `ignore` met a duplicate; the returned job IS the existing job (its own id,
 *    name and data).
 *  - `replaced`: inserted after superseding `replaced` (the duplicate `reject` would have named)
 *    and `also_replaced` (further ones, oldest first, when there were several), each as it is after
 *    the add (a live one now `cancelled`, a finished one as it was): the fields and job views of
 *    the backend's `EnqueueResult`, on every backend and entry point.
 *  - `updated`: `x_update` met a duplicate and updated it in place; the returned job IS the
 *    existing job after the update; `changed` lists the fields whose stored value differed.
 *  - `rejected`: only in `addBulk` results, for an entry that was not added (a single `add`
 *    throws instead). `error` is what that `add` would have thrown: `DuplicateJobError` (then also
 *    `existingJobId`/`existingJobState`), `InvalidJobInputError` for a `jobId` taken by a
 *    concurrent add, or `BackendError`. `uniquenessKey` is `''` for an entry without a policy.
 */
export type UniqueOutcome<Kind extends OutcomeKind = OutcomeKind> = Extract<Outcomes, { outcome: Kind }>;

export type OutcomeKind = Outcomes['outcome'];
/** Fields an outcome never has are `?: undefined`, so any field can be read before narrowing. */
export type Outcomes =
  | {
      outcome: 'created';
      uniquenessKey: string;
      /** Added under a report-only policy (`x_report_only`): always inserted, as a plain add. */
      reportOnly?: true;
      /** Report-only: what the policy would have done instead of inserting; absent when it would have inserted too. */
      wouldBe?: WouldBe;
      /** Report-only with `wouldBe`: the job the policy would have met. */
      existingJobId?: string;
      existingJobState?: OjsJobState;
      replaced?: undefined;
      also_replaced?: undefined;
      error?: undefined;
      changed?: undefined;
    }
  | {
      outcome: 'deduplicated';
      uniquenessKey: string;
      reportOnly?: undefined;
      wouldBe?: undefined;
      existingJobId: string;
      existingJobState: OjsJobState;
      /** x_successor: the add was kept as the active job's pending successor, which will have this id once that job finishes. */
      successor?: { id: string };
      replaced?: undefined;
      also_replaced?: undefined;
      error?: undefined;
      changed?: undefined;
    }
  | {
      outcome: 'updated';
      uniquenessKey: string;
      reportOnly?: undefined;
      wouldBe?: undefined;
      existingJobId: string;
      existingJobState: OjsJobState;
      changed: UpdateField[];
      replaced?: undefined;
      also_replaced?: undefined;
      error?: undefined;
    }
  | {
      outcome: 'replaced';
      uniquenessKey: string;
      reportOnly?: undefined;
      wouldBe?: undefined;
      replaced: OjsJob;
      also_replaced?: OjsJob[];
      existingJobId?: undefined;
      existingJobState?: undefined;
      error?: undefined;
      changed?: undefined;
    }
  | {
      outcome: 'rejected';
      uniquenessKey: string;
      reportOnly?: undefined;
      wouldBe?: undefined;
      error: OjsUniqueError;
      existingJobId?: string;
      existingJobState?: OjsJobState;
      replaced?: undefined;
      also_replaced?: undefined;
      changed?: undefined;
    };

/** What a single `add` with a policy can answer (a refusal throws). */
export type AddOutcomeKind = Exclude<OutcomeKind, 'rejected'>;

/**
 * A job returned for a unique add: the queue's `Job`, with what the add did. A `deduplicated` job
 * found in another queue (a policy without the `queue` dimension) has the same name (`type` is
 * always hashed) and is typed with this queue's data and result types: one job name, one payload.
 */
export type UniqueJob<DataType = any, ResultType = any, NameType extends string = string, Kind extends OutcomeKind = OutcomeKind> = Job<
  DataType,
  ResultType,
  NameType
> & {
  unique: UniqueOutcome<Kind>;
};

/**
 * A job returned for an add with `unique: null`: BullMQ's own, untouched (no `unique` is attached,
 * so a plain add stays exactly BullMQ's). `unique?: undefined` says so and lets `job.unique` be
 * read on a mix of both.
 */
export type PlainJob<DataType, ResultType, NameType extends string> = Job<DataType, ResultType, NameType> & { unique?: undefined };

/**
 * A job returned for an add that names no policy: the queue's `defaultJobOptions.unique` (runtime
 * configuration, not in the queue's type) may have applied one, so `unique` is there exactly when
 * it did.
 */
export type DefaultedJob<DataType, ResultType, NameType extends string, Kind extends OutcomeKind> = Job<DataType, ResultType, NameType> & {
  unique?: UniqueOutcome<Kind>;
};

/** A job `findUniqueJob` found: the queue's `Job`, with its OJS state. */
export type FoundJob<DataType = any, ResultType = any, NameType extends string = string> = Job<DataType, ResultType, NameType> & {
  ojsState: OjsJobState;
};

/** What the untyped implementations below return, whatever the queue's types. */
export type AddedJob = PlainJob<any, any, string> | UniqueJob<any, any, string, AddOutcomeKind>;
export type BulkAddedJob = PlainJob<any, any, string> | UniqueJob;

/** Options of an add with a policy. */
export type WithPolicy = UniqueJobsOptions & { unique: UniquePolicyInput };
/** Options of an add without one, even the queue's default: BullMQ's own. */
export type NoPolicy = JobsOptions & { unique: null; ojsMeta?: undefined };
/** Options naming no policy: BullMQ's own (the queue's `defaultJobOptions.unique` applies, if any). */
export type WithoutPolicy = JobsOptions & { unique?: null; ojsMeta?: undefined };

/**
 * `policies`: by job name, applied to every add of that name through the wrapper (`add`,
 * `addBulk`, flow nodes without children, scheduler templates, `explainUnique` and the lookups),
 * one that passes no options included, over the queue's `defaultJobOptions.unique`; an add whose
 * own `unique` differs is refused (`opts.unique`), the same policy is accepted. `reportOnly`:
 * every policy applied through the wrapper is report-only (docs/bullmq.md, "Report-only rollout").
 */
export interface WithUniquenessOptions<Name extends string = string> extends EntryPointPolicyOptions<Name> {
  /** How long the archive of a job cancelled by `replace` stays readable, in ms. (Default: 7 days.) */
  cancelledRetentionMs?: number;
  /**
   * Send a `reject`/`ignore` add whose fingerprint this queue saw holding a job moments ago as the
   * small `unique-probe` script first, and the full add only if the probe finds no duplicate
   * (docs/bullmq.md, "The duplicate probe"). Turn off when most adds of a fingerprint come after
   * its job finished and stopped counting: each would pay a probe round trip. (Default: true.)
   */
  duplicateProbe?: boolean;
  /**
   * Count each duplicate add on the job it met (`duplicate_count`, `last_duplicate_at` on the OJS
   * job view, `readUniqueFields`; docs/decisions.md, "Duplicate counts"): one `HSET` per counted
   * duplicate, in the script that decides. Applies to every add through the wrapper, its flows
   * and its schedulers. (Default: false: nothing counted, no field written.)
   */
  countDuplicates?: boolean;
}

export type DataOf<Q> = Q extends Queue<any, any, any, infer DataType, any, any> ? DataType : never;
export type ResultOf<Q> = Q extends Queue<any, any, any, any, infer ResultType, any> ? ResultType : never;
export type NameOf<Q> = Q extends Queue<any, any, any, any, any, infer NameType> ? NameType : never;

/**
 * `add`/`addBulk` of the wrapper, typed like BullMQ's own (the queue's data, result and name
 * types) and answering per call what the runtime returns: a `UniqueJob` when every add has a
 * policy, a plain `Job` when none has, either otherwise (options held in a `UniqueJobsOptions`).
 */
export interface UniqueAdds<DataType, ResultType, NameType extends string, Q> {
  add(name: NameType, data: DataType, opts: WithPolicy): Promise<UniqueJob<DataType, ResultType, NameType, AddOutcomeKind>>;
  add(name: NameType, data: DataType, opts: NoPolicy): Promise<PlainJob<DataType, ResultType, NameType>>;
  add(name: NameType, data: DataType, opts?: WithoutPolicy): Promise<DefaultedJob<DataType, ResultType, NameType, AddOutcomeKind>>;
  add(name: NameType, data: DataType, opts: UniqueJobsOptions | undefined): Promise<AddResult<DataType, ResultType, NameType>>;
  addBulk(jobs: readonly { name: NameType; data: DataType; opts: WithPolicy }[]): Promise<UniqueJob<DataType, ResultType, NameType>[]>;
  addBulk(jobs: readonly { name: NameType; data: DataType; opts: NoPolicy }[]): Promise<PlainJob<DataType, ResultType, NameType>[]>;
  addBulk(
    jobs: readonly { name: NameType; data: DataType; opts?: WithoutPolicy }[],
  ): Promise<DefaultedJob<DataType, ResultType, NameType, OutcomeKind>[]>;
  addBulk(jobs: { name: NameType; data: DataType; opts?: UniqueJobsOptions }[]): Promise<BulkResult<DataType, ResultType, NameType>>;
  /**
   * The job holding a key: the one this add would meet as its duplicate now (the oldest its
   * policy counts), or by `{ uniqueness_key }` the oldest unfinished job under the key; null when
   * none. BullMQ's `getDeduplicationJobId`, for OJS keys. A job of another queue (a policy without
   * the `queue` dimension) is bound to that queue. `ojsState` is its OJS state (a cancelled job
   * lives in its archive, which BullMQ's `getState()` calls 'unknown').
   */
  findUniqueJob(name: NameType, data: DataType, opts?: UniqueJobsOptions): Promise<FoundJob<DataType, ResultType, NameType> | null>;
  findUniqueJob(key: UniquenessKeyRef): Promise<FoundJob<DataType, ResultType, NameType> | null>;
  /**
   * Releases a key (named as for `findUniqueJob`): the next add of it inserts, whatever holds it
   * now. The jobs stay as they are (a waiting one still runs) but no add counts them any more.
   * Resolves to how many jobs stopped holding the key. BullMQ's `removeDeduplicationKey`.
   */
  releaseUniqueKey(name: NameType, data: DataType, opts?: UniqueJobsOptions): Promise<number>;
  releaseUniqueKey(key: UniquenessKeyRef): Promise<number>;
  /**
   * What `add(name, data, opts)` would do now, and why, writing nothing: the uniqueness key and
   * its pre-image, every job recorded under it (state, window end, whether the policy counts it)
   * and the outcome (`created`, `deduplicated`, `rejected`, `replaced`, `updated`). The queue's
   * default policy applies as in `add`. Bad input: `InvalidJobInputError`, as `add` answers.
   */
  explainUnique(name: NameType, data: DataType, opts?: UniqueJobsOptions): Promise<UniqueExplanation>;
  /**
   * The jobs a `replace` add of this queue's job `jobId` superseded, oldest first, each bound to
   * its own queue: a cancelled one read from its archive (`ojsState` 'cancelled',
   * `ojsReplacedBy` in its hash; BullMQ's `getJob` no longer finds it), a finished one as it is.
   * One gone meanwhile (an archive past `cancelledRetentionMs`) is left out; [] when the job
   * replaced nothing.
   */
  getReplacedJobs(jobId: string): Promise<FoundJob<DataType, ResultType, NameType>[]>;
  /**
   * BullMQ's `upsertJobScheduler`; a template whose `opts.unique` is set (or the queue's default
   * policy) schedules relay jobs that add each tick's job through the unique path: run the
   * queue's worker with `makeUniqueSchedulerProcessor` (docs/bullmq.md, "Job schedulers").
   * Resolves to the scheduler's next job (a relay job when the template has a policy).
   */
  upsertJobScheduler(
    jobSchedulerId: NameType,
    repeatOpts: Parameters<Queue['upsertJobScheduler']>[1],
    jobTemplate?: { name?: NameType; data?: DataType; opts?: UniqueSchedulerTemplateOptions },
  ): Promise<Job<DataType, ResultType, NameType>>;
  /** The queue that was wrapped. */
  readonly unwrapped: Q;
}

/**
 * The catch-all overloads again, after the queue's own in {@link UniqueQueue}: TypeScript reports
 * the last overload's error when none matches (so a misspelt policy is reported against the
 * policy, not as "'unique' does not exist in type 'JobsOptions'"), and `Parameters`/`ReturnType`
 * read the last overload. Each differs from its twin in `UniqueAdds` (an optional `opts`, a
 * readonly array): an intersection keeps only the first of two identical signatures.
 */
export interface CatchAllAdds<DataType, ResultType, NameType extends string> {
  add(name: NameType, data: DataType, opts?: UniqueJobsOptions): Promise<AddResult<DataType, ResultType, NameType>>;
  /** In a mixed batch, a plain entry that was not added is `rejected`, with `uniquenessKey: ''`. */
  addBulk(
    jobs: readonly { name: NameType; data: DataType; opts?: UniqueJobsOptions }[],
  ): Promise<BulkResult<DataType, ResultType, NameType>>;
}

export type AddResult<DataType, ResultType, NameType extends string> =
  PlainJob<DataType, ResultType, NameType> | UniqueJob<DataType, ResultType, NameType, AddOutcomeKind>;
export type BulkResult<DataType, ResultType, NameType extends string> = (
  PlainJob<DataType, ResultType, NameType> | UniqueJob<DataType, ResultType, NameType>
)[];

/**
 * The wrapped queue: the queue's own type, so it goes wherever a `Queue` does and the methods that
 * return the queue (`on`, `once` …) return the wrapper, with `add`/`addBulk` that accept `unique`.
 * Ours come first, so they are the overloads a call picks. The queue's own `add`/`addBulk` stay in
 * the list (leaving them out of `Q` would also drop its private members, and with them
 * assignability to `Queue`) but are never picked: ours accept all of their arguments.
 */
export type UniqueQueue<Q extends Queue = Queue> = UniqueAdds<DataOf<Q>, ResultOf<Q>, NameOf<Q>, Q> &
  Q &
  CatchAllAdds<DataOf<Q>, ResultOf<Q>, NameOf<Q>>;
