/**
 * The gateway over the in-memory backend (`createMemoryBackend`): the embedded default of
 * `ojs-unique serve`. The backend does the unique-jobs work and the lifecycle; this store keeps
 * beside each job what the worker protocol adds (result, error, start time, reservation, retry
 * schedule, envelope fields).
 *
 * Retries: the backend is given a retry delay it never reaches, and a retryable job is promoted
 * (`promote`) once its own backoff (from `options.retry`) has passed, checked whenever the store
 * is read. An active job whose reservation expired is failed back the same way (`nack`), so a
 * crashed HTTP worker's job runs again.
 */
import { createMemoryBackend, type MemoryBackend } from '../adapters/memory/index.js';
import { InvalidJobInputError, InvalidTransitionError, JobNotFoundError } from '../src/errors.js';
import type { JsonValue, OjsJob } from '../src/job.js';
import type { OjsJobState } from '../src/job-state.js';
import type { EnqueueResult, UniqueJobsCapabilities } from '../src/unique-jobs-backend.js';
import type {
  DeadLetterPage,
  DeadLetters,
  FetchRequest,
  GatewayEnqueueResult,
  GatewayJob,
  GatewayJobInput,
  GatewayStore,
  JobError,
  JobErrorEntry,
  RetryPolicy,
  StoreHealth,
  WorkerState,
} from './gateway-store.js';
import { executionDeadline, lapseError, reservationOf, type Lapse } from './job-reservation.js';
import { atBatchPaths, validateAt } from './batch-input.js';
import { gatewayCapabilities, refuseUnservedExtension } from './unserved-extensions.js';
import { DEFAULT_RETRY_POLICY, isNonRetryable, retryDelayMs } from './retry-policy.js';
import { withFailure } from './error-history.js';
import { EXPIRED_ERROR, isExpired } from './job-expiry.js';
import { RateWindow, type RateLimit } from './queue-rate-limit.js';
import { createMemoryIdempotencyRecords } from './memory-idempotency-records.js';
import { createMemoryCronSchedules, type MemoryCronSchedules } from './memory-cron-schedules.js';
import { createMemoryWorkflowRecords } from './memory-workflow-records.js';
import { settleWorkflowJob } from './workflow-advance.js';

/** Far enough that the backend never promotes a retry itself. */
const NEVER_MS = 10 * 365 * 24 * 3600 * 1000;
/** The backoff of a job whose PUSH gave no policy: OJS's defaults, without jitter (a retry's time is predictable). */
const HOST_RETRY_POLICY: RetryPolicy = { ...DEFAULT_RETRY_POLICY, jitter: false };

interface SideRecord {
  envelope: Record<string, JsonValue>;
  retry: RetryPolicy | undefined;
  startedAt?: number;
  reservedUntil?: number;
  /** What a lapse of the reservation means (job-reservation.ts). */
  lapse?: Lapse;
  retryAt?: number;
  result?: JsonValue;
  error?: JobError;
  errors?: JobErrorEntry[];
  retryDelayMs?: number;
  /** When a fetch found it expired and discarded it (job-expiry.ts). */
  expiredAt?: number;
}

export interface MemoryGatewayStoreOptions {
  /**
   * The clock of the store and of its backend, in epoch ms: reservations, retries, rate-limit
   * windows and expiry all read it. Inject one to move time in tests. (Default: `Date.now`.)
   */
  clock?: { now(): number };
  /**
   * Count each duplicate PUSH on the job it met: `duplicate_count` and `last_duplicate_at` in the
   * job's JSON (docs/decisions.md, "Duplicate counts"). (Default: false.)
   */
  countDuplicates?: boolean;
}

/** A memory store's crons can be told that its clock moved (`lookNow`). */
export interface MemoryGatewayStore extends GatewayStore {
  readonly cron: MemoryCronSchedules;
}

export function createMemoryGatewayStore(options: MemoryGatewayStoreOptions = {}): MemoryGatewayStore {
  return new MemoryStore(options.clock ?? { now: () => Date.now() }, options.countDuplicates ?? false);
}

class MemoryStore implements MemoryGatewayStore {
  readonly backend = 'memory' as const;
  readonly #clock: { now(): number };
  readonly #countDuplicates: boolean;
  #memory: MemoryBackend;
  #side = new Map<string, SideRecord>();
  /** Ids with a retry or a reservation pending: what #tick looks at (not every job). */
  #timed = new Set<string>();
  /** Paused queues: this process's (the memory backend has no other). */
  readonly #paused = new Set<string>();
  readonly #rateWindows = new Map<string, RateWindow>();
  /** The states operators asked of workers, each until its expiry: this process's (the memory backend has no other). */
  readonly #workers = new Map<string, { state: 'quiet' | 'terminate'; untilMs: number }>();
  readonly idempotency: ReturnType<typeof createMemoryIdempotencyRecords>;
  readonly deadLetters: DeadLetters = {
    list: (query) => this.#listDeadLetters(query),
    retry: (id) => this.#retryDeadLetter(id),
    remove: (id) => this.#removeDeadLetter(id),
  };
  readonly cron: MemoryCronSchedules;
  readonly workflows: ReturnType<typeof createMemoryWorkflowRecords>;
  readonly #capabilities: UniqueJobsCapabilities;

  constructor(clock: { now(): number }, countDuplicates: boolean) {
    this.#clock = clock;
    this.#countDuplicates = countDuplicates;
    this.#memory = createMemoryBackend({ retryDelayMs: () => NEVER_MS, clock, countDuplicates });
    this.idempotency = createMemoryIdempotencyRecords(clock);
    this.cron = createMemoryCronSchedules(clock);
    this.workflows = createMemoryWorkflowRecords(clock);
    // `x_successor` stays the backend's own (server/unserved-extensions.ts).
    this.#capabilities = gatewayCapabilities(this.#memory.capabilities);
  }

  get capabilities() {
    return this.#capabilities;
  }

  async enqueue(input: GatewayJobInput): Promise<GatewayEnqueueResult> {
    await this.#tick();
    const { extras, ...job } = input;
    refuseUnservedExtension(job, this.#capabilities);
    const result = await this.#memory.enqueue(job);
    this.#record(result, extras);
    return this.#result(result);
  }

  /** All-or-nothing: the backend's `enqueueMany` (no job of the batch is visible until all are in; a failure undoes all). */
  async enqueueBatch(inputs: GatewayJobInput[]): Promise<GatewayEnqueueResult[]> {
    inputs.forEach((input, index) => validateAt(input, index, this.capabilities.unique_jobs.extensions ?? []));
    await this.#tick();
    const results = await atBatchPaths(this.#memory.enqueueMany(inputs.map(({ extras: _extras, ...job }) => job)));
    results.forEach((result, index) => {
      this.#record(result, inputs[index]!.extras);
    });
    return results.map((result) => this.#result(result));
  }

  async getJob(id: string): Promise<GatewayJob | null> {
    await this.#tick();
    const job = await this.#memory.getJob(id);
    return job ? this.#view(job) : null;
  }

  async cancel(id: string): Promise<GatewayJob> {
    await this.#tick();
    return this.#view(await this.#memory.cancel(id));
  }

  async activate(id: string): Promise<GatewayJob> {
    await this.#tick();
    return this.#view(await this.#memory.activate(id));
  }

  async fetch(request: FetchRequest): Promise<GatewayJob[]> {
    await this.#tick();
    const jobs: GatewayJob[] = [];
    while (jobs.length < request.count) {
      const now = this.#clock.now();
      const open = request.queues.filter((queue) => !this.#paused.has(queue) && (this.#rateWindows.get(queue)?.admits(now) ?? true));
      if (open.length === 0) break;
      const job = await this.#memory.fetch(open);
      if (!job) break;
      const side = this.#sideOf(job.id);
      const view = this.#view(job);
      if (isExpired(view, now)) {
        // Discarded, never handed out: it counts against no rate limit.
        await this.#memory.nack(job.id, { message: EXPIRED_ERROR.message }, { retry: false });
        side.error = EXPIRED_ERROR;
        side.expiredAt = now;
        continue;
      }
      this.#rateWindows.get(job.queue)?.count(now);
      side.startedAt = now;
      this.#reserve(side, now, request.visibilityTimeoutMs);
      this.#timed.add(job.id);
      jobs.push(this.#view(job));
    }
    return jobs;
  }

  async ack(id: string, result: JsonValue | undefined): Promise<GatewayJob> {
    await this.#tick();
    const job = await this.#memory.ack(id);
    const side = this.#sideOf(id);
    delete side.error;
    delete side.reservedUntil;
    delete side.lapse;
    if (result !== undefined) side.result = result;
    const view = this.#view(job);
    await settleWorkflowJob(this, view);
    return view;
  }

  async nack(id: string, error: JobError, retry: boolean): Promise<GatewayJob> {
    await this.#tick();
    const allowed = retry && !isNonRetryable(this.#side.get(id)?.retry, error);
    const job = await this.#memory.nack(id, { message: error.message }, { retry: allowed });
    this.#recordFailure(job, error);
    const view = this.#view(job);
    await settleWorkflowJob(this, view);
    return view;
  }

  async heartbeat(id: string, visibilityTimeoutMs: number | null): Promise<GatewayJob> {
    await this.#tick();
    const job = await this.#memory.getJob(id);
    if (!job) throw new JobNotFoundError(id);
    if (job.state !== 'active') throw new InvalidTransitionError(id, job.state, 'active');
    this.#reserve(this.#sideOf(id), this.#clock.now(), visibilityTimeoutMs);
    this.#timed.add(id);
    return this.#view(job);
  }

  async release(id: string, error: JobError): Promise<GatewayJob> {
    await this.#tick();
    return this.#view(await this.#failBack(id, error));
  }

  async workerState(workerId: string): Promise<WorkerState> {
    const asked = this.#workers.get(workerId);
    if (asked && asked.untilMs <= this.#clock.now()) this.#workers.delete(workerId);
    else if (asked) return asked.state;
    return 'running';
  }

  async setWorkerState(workerId: string, state: 'quiet' | 'terminate', retentionMs: number): Promise<void> {
    const kept = (await this.workerState(workerId)) === 'terminate' ? 'terminate' : state;
    this.#workers.set(workerId, { state: kept, untilMs: this.#clock.now() + retentionMs });
  }

  /** Reserves a fetched job from `now`, never past its execution deadline (job-reservation.ts). */
  #reserve(side: SideRecord, now: number, visibilityTimeoutMs: number | null): void {
    const deadline = side.startedAt === undefined ? null : executionDeadline(side.envelope, side.startedAt);
    const reservation = reservationOf(side.envelope, deadline, now, visibilityTimeoutMs);
    side.reservedUntil = reservation.untilMs;
    side.lapse = reservation.lapse;
  }

  /** Fails an active job back to `available` at once, `error` recorded (its attempt counted: the last one is discarded). */
  async #failBack(id: string, error: JobError): Promise<OjsJob> {
    const job = await this.#memory.nack(id, { message: error.message });
    this.#recordFailure(job, error);
    const side = this.#sideOf(id);
    if (side.retryAt === undefined) return job;
    delete side.retryAt;
    return this.#memory.promote(id);
  }

  async setPaused(queue: string, paused: boolean): Promise<void> {
    if (paused) this.#paused.add(queue);
    else this.#paused.delete(queue);
  }

  async isPaused(queue: string): Promise<boolean> {
    return this.#paused.has(queue);
  }

  async setRateLimit(queue: string, limit: RateLimit): Promise<void> {
    const window = this.#rateWindows.get(queue);
    if (window) window.limit = limit;
    else this.#rateWindows.set(queue, new RateWindow(limit));
  }

  async now(): Promise<number> {
    return this.#clock.now();
  }

  async queueStats(queue: string): Promise<Partial<Record<OjsJobState, number>>> {
    await this.#tick();
    const counts: Partial<Record<OjsJobState, number>> = {};
    for (const job of this.#memory.jobs()) if (job.queue === queue) counts[job.state] = (counts[job.state] ?? 0) + 1;
    return counts;
  }

  async health(): Promise<StoreHealth> {
    return { ok: true, type: 'memory' };
  }

  async reset(): Promise<void> {
    await this.#memory.close();
    this.#memory = createMemoryBackend({ retryDelayMs: () => NEVER_MS, clock: this.#clock, countDuplicates: this.#countDuplicates });
    this.#side.clear();
    this.#timed.clear();
    this.#paused.clear();
    this.#rateWindows.clear();
    this.#workers.clear();
    this.idempotency.clear();
    this.cron.clear();
    this.workflows.clear();
  }

  async close(): Promise<void> {
    this.cron.close();
    await this.#memory.close();
  }

  #recordFailure(job: OjsJob, error: JobError): void {
    const side = this.#sideOf(job.id);
    const now = this.#clock.now();
    side.error = error;
    side.errors = withFailure(side.errors, error, job.attempt, new Date(now));
    delete side.reservedUntil;
    delete side.lapse;
    if (job.state === 'retryable') {
      side.retryDelayMs = retryDelayMs(side.retry ?? HOST_RETRY_POLICY, job.attempt);
      side.retryAt = now + side.retryDelayMs;
      this.#timed.add(job.id);
    }
  }

  /** The discarded jobs, oldest discard first. */
  async #listDeadLetters(query: { queue?: string; limit: number; offset: number }): Promise<DeadLetterPage> {
    await this.#tick();
    const dead = this.#memory
      .jobs()
      .filter((job) => job.state === 'discarded' && (query.queue === undefined || job.queue === query.queue))
      .sort((a, b) => (a.completed_at ?? '').localeCompare(b.completed_at ?? ''));
    return { jobs: dead.slice(query.offset, query.offset + query.limit).map((job) => this.#view(job)), total: dead.length };
  }

  /** The backend's `retry` (discarded -> available, attempt 0); the error history stays. */
  async #retryDeadLetter(id: string): Promise<GatewayJob> {
    await this.#deadLetter(id);
    const job = await this.#memory.retry(id);
    const side = this.#sideOf(id);
    for (const field of ['error', 'retryDelayMs', 'expiredAt', 'startedAt', 'result'] as const) delete side[field];
    return this.#view(job);
  }

  async #removeDeadLetter(id: string): Promise<void> {
    await this.#deadLetter(id);
    await this.#memory.remove(id);
    this.#side.delete(id);
  }

  /** @throws JobNotFoundError unless `id` is a discarded job. */
  async #deadLetter(id: string): Promise<void> {
    await this.#tick();
    if ((await this.#memory.getJob(id))?.state !== 'discarded') throw new JobNotFoundError(id);
  }

  /** Promotes retries whose backoff passed and fails back expired reservations. */
  async #tick(): Promise<void> {
    const now = this.#clock.now();
    for (const id of this.#timed) {
      const side = this.#side.get(id);
      if (!side || (side.retryAt === undefined && side.reservedUntil === undefined)) {
        this.#timed.delete(id);
        continue;
      }
      if (side.reservedUntil !== undefined && side.reservedUntil <= now) {
        const lapse = side.lapse ?? 'visibility_timeout';
        delete side.reservedUntil;
        const error = lapseError(lapse);
        if (lapse === 'visibility_timeout') await this.#failBack(id, error).catch(() => null);
        else {
          // An execution timeout is a failure: the job's retry policy decides (retryable or discarded).
          const job = await this.#memory.nack(id, { message: error.message }).catch(() => null);
          if (job) this.#recordFailure(job, error);
        }
      }
      // After a lapsed reservation too: its retry may be due at once.
      if (side.retryAt !== undefined && side.retryAt <= this.#clock.now()) {
        delete side.retryAt;
        await this.#memory.promote(id).catch(() => undefined);
      }
    }
  }

  /**
   * What an enqueue keeps beside its job. A new job's record is new; an `updated` one (x_update)
   * is an existing job, possibly active: only its envelope and retry policy change, never its run
   * (start, reservation, pending retry, result, error).
   */
  #record(result: EnqueueResult, extras: GatewayJobInput['extras']): void {
    if (result.outcome === 'deduplicated') return;
    if (result.outcome === 'updated') {
      const side = this.#sideOf(result.job.id);
      side.envelope = { ...side.envelope, ...extras.envelope };
      if (extras.retry !== undefined) side.retry = extras.retry;
      return;
    }
    this.#side.set(result.job.id, { envelope: extras.envelope ?? {}, retry: extras.retry });
  }

  #sideOf(id: string): SideRecord {
    let side = this.#side.get(id);
    if (!side) this.#side.set(id, (side = { envelope: {}, retry: undefined }));
    return side;
  }

  #result(result: EnqueueResult): GatewayEnqueueResult {
    if (result.outcome === 'replaced') {
      const replaced: GatewayEnqueueResult = { outcome: 'replaced', job: this.#view(result.job), replaced: this.#view(result.replaced) };
      if (result.also_replaced) replaced.also_replaced = result.also_replaced.map((job) => this.#view(job));
      return replaced;
    }
    if (result.outcome === 'updated') return { outcome: 'updated', job: this.#view(result.job), changed: result.changed };
    if (result.outcome === 'created' && result.wouldBe !== undefined) {
      return { outcome: 'created', job: this.#view(result.job), wouldBe: result.wouldBe, existingJobId: result.existingJobId! };
    }
    return { outcome: result.outcome, job: this.#view(result.job) };
  }

  #view(job: OjsJob): GatewayJob {
    const side = this.#side.get(job.id);
    const view: GatewayJob = { ...job, enqueued_at: job.created_at, envelope: side?.envelope ?? {} };
    if (side?.startedAt !== undefined) view.started_at = new Date(side.startedAt).toISOString();
    if (side?.expiredAt !== undefined && job.state === 'discarded') {
      // It never ran: no start, no completion.
      delete view.completed_at;
      delete view.started_at;
      view.discarded_at = new Date(side.expiredAt).toISOString();
    }
    if (side?.result !== undefined && job.state === 'completed') view.result = side.result;
    if (side?.error !== undefined && job.state !== 'completed') view.error = side.error;
    if (side?.errors !== undefined) view.errors = side.errors;
    if (side?.retryDelayMs !== undefined) view.retry_delay_ms = side.retryDelayMs;
    return view;
  }
}
