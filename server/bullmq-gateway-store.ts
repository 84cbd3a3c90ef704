/**
 * The gateway over BullMQ. An OJS queue is the BullMQ queue of that name under the prefix; a job
 * POSTed here is an ordinary BullMQ job (name = OJS type, data = the payload of
 * `src/ojs-args-payload.ts`), added by the adapter's `createBullMQBackend`, so the user's own
 * `Worker`s process it and `withUniqueness(queue).add` of the same job meets it as a duplicate.
 *
 * The worker protocol is BullMQ's own manual processing (a `Worker` without a processor):
 * `getNextJob(token)` claims a job with a lock, `extendLock` is the heartbeat,
 * `moveToCompleted` / `moveToFailed` end the attempt (BullMQ's attempts and backoff decide the
 * retry; a non-retryable error is an `UnrecoverableError`). A job whose lock expires is
 * recovered by the stalled-job check (this store's, and any running BullMQ worker's). So a
 * job added with `queue.add` is fetchable here, and a job fetched here is never also processed
 * by a user's `Worker` (BullMQ's lock).
 *
 * What BullMQ has no field for (the lock token of a job fetched here, OJS envelope fields such as
 * `tags`, the structured error) is kept in a hash per job, `<prefix>:ojs-gateway:job:<id>`, one
 * field each, so that concurrent requests on one job (a nack racing a re-fetch) each write only
 * their own fields. It expires `SIDE_RETENTION_MS` after the job's end through the gateway (ack,
 * final nack, cancel).
 */
import { Job, UnrecoverableError, Worker, type Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';
import { createBullMQBackend, type BullMQBackend } from '../adapters/bullmq/index.js';
import { BackendError, InvalidJobInputError, InvalidTransitionError, JobNotFoundError } from '../src/errors.js';
import type { JsonValue, OjsJob } from '../src/job.js';
import type { OjsJobState } from '../src/job-state.js';
import type { EnqueueResult } from '../src/unique-jobs-backend.js';
import type {
  DeadLetterPage,
  DeadLetters,
  FetchRequest,
  GatewayEnqueueResult,
  GatewayJob,
  GatewayJobInput,
  GatewayStore,
  IdempotencyRecords,
  JobError,
  JobErrorEntry,
  RetryPolicy,
  StoreHealth,
  WorkerState,
  WorkflowRecords,
} from './gateway-store.js';
import { createBullmqJobReservations, type BullmqJobReservations } from './bullmq-job-reservations.js';
import { executionDeadline, lapseError, reservationOf, type Lapse } from './job-reservation.js';
import { atBatchPaths, checkBatch } from './batch-input.js';
import { gatewayCapabilities, refuseUnservedExtension } from './unserved-extensions.js';
import { EXPIRED_ERROR, isExpired } from './job-expiry.js';
import type { RateLimit } from './queue-rate-limit.js';
import { createBullmqIdempotencyRecords } from './bullmq-idempotency-records.js';
import { isNonRetryable, retryDelayMs } from './retry-policy.js';
import { withFailure } from './error-history.js';
import { createBullmqCronSchedules, CRON_QUEUE, type BullmqCronSchedules } from './bullmq-cron-schedules.js';
import { createBullmqWorkflowRecords } from './bullmq-workflow-records.js';
import { settleWorkflowJob } from './workflow-advance.js';

export interface BullmqGatewayStoreOptions {
  redisUrl: string;
  /** BullMQ key prefix. (Default: `bull`.) */
  prefix?: string;
  /** How long a Redis command may take before it fails, in ms (ioredis's `commandTimeout`). (Default: 5000.) */
  commandTimeoutMs?: number;
  /**
   * Count each duplicate PUSH on the job it met: `duplicate_count` and `last_duplicate_at` in the
   * job's JSON (docs/decisions.md, "Duplicate counts"). (Default: false.)
   */
  countDuplicates?: boolean;
}

interface SideRecord {
  envelope?: Record<string, JsonValue>;
  /** OJS meta of a job without a policy (the adapter stores meta with the policy only). */
  meta?: Record<string, JsonValue>;
  token?: string;
  /** When this gateway's fetch started the job (a cancelled job's BullMQ hash is archived without it). */
  startedAt?: string;
  error?: JobError;
  /** The OJS retry policy of the PUSH (retry-options.ts), when it gave one. */
  retry?: RetryPolicy;
  errors?: JobErrorEntry[];
  /** The delay the last failure's retry was given (the policy's). */
  retryDelayMs?: number;
  /** The `scheduled_at` the PUSH asked for, to the millisecond (see #view). */
  scheduledAt?: string;
  /** When a fetch found it expired and discarded it (job-expiry.ts). */
  expiredAt?: string;
  /** The reservation of the attempt (job-reservation.ts): when it lapses (ms, Redis's clock), and what that means. */
  reservedUntil?: string;
  lapse?: Lapse;
  /** The attempt's execution deadline (its start plus `timeout_ms`), ms on Redis's clock. */
  deadline?: string;
}

/** How long a side record outlives its job's end through the gateway (ack, final nack, cancel): as long as a cancelled archive. */
const SIDE_RETENTION_MS = 7 * 24 * 3600 * 1000;
/**
 * How far BullMQ's due time of a job may lie from the `scheduled_at` its PUSH asked for and still
 * be that schedule: BullMQ keeps a delay relative to the add's Redis clock, computed from this
 * process's clock, so the two differ by the clocks' skew and the add's latency (a millisecond or
 * two on one host). Further apart, the schedule was changed since (an update, BullMQ's changeDelay).
 */
const SCHEDULE_DRIFT_MS = 1000;
/** Side record fields stored as JSON. */
const JSON_FIELDS = new Set<keyof SideRecord>(['envelope', 'meta', 'error', 'retry', 'errors', 'retryDelayMs']);

const PENDING_UNSUPPORTED = 'pending jobs are not supported on the BullMQ backend';
/**
 * Manual workers kept open (each holds a Redis connection of its own): past this, the least
 * recently fetched-from queue's worker is closed. A job it handed out stays claimed by its lock
 * token (ack and nack need no worker), and BullMQ's stalled check of that queue runs again once a
 * fetch reopens it, or in any BullMQ worker of the queue.
 */
const MAX_OPEN_WORKERS = 16;
/**
 * BullMQ's lock of a fetched job outlives its reservation by this much: the gateway's sweep (the
 * next call of any gateway process) fails a lapsed reservation back with its OJS error first, and
 * BullMQ's stalled check (this store's, or a BullMQ worker's) recovers the job only when no
 * gateway process is called.
 */
const LOCK_MARGIN_MS = 5000;
/** Lapsed reservations failed back per call: the rest at the next one. */
const LAPSED_BATCH = 100;

export function createBullmqGatewayStore(options: BullmqGatewayStoreOptions): GatewayStore {
  return new BullmqGatewayStore(options);
}

class BullmqGatewayStore implements GatewayStore {
  readonly backend = 'bullmq' as const;
  readonly #backend: BullMQBackend;
  readonly #redis: Redis;
  /** For the manual workers: BullMQ requires `maxRetriesPerRequest: null` on a worker's connection. */
  readonly #workerRedis: Redis;
  readonly #prefix: string;
  readonly #workers = new Map<string, Worker>();
  /** Queues found by #discoverQueues, and when it last looked. */
  readonly #opened = new Set<string>();
  #discoveredAt = 0;
  readonly idempotency: IdempotencyRecords;
  readonly #reservations: BullmqJobReservations;
  readonly deadLetters: DeadLetters = {
    list: (query) => this.#listDeadLetters(query),
    retry: (id) => this.#retryDeadLetter(id),
    remove: (id) => this.#removeDeadLetter(id),
  };
  readonly cron: BullmqCronSchedules;
  readonly workflows: WorkflowRecords;

  constructor(options: BullmqGatewayStoreOptions) {
    this.#prefix = options.prefix ?? 'bull';
    // Auto-pipelining: the commands of concurrent requests issued in one tick go out in one write.
    this.#redis = new Redis(options.redisUrl, {
      maxRetriesPerRequest: 2,
      commandTimeout: options.commandTimeoutMs ?? 5000,
      enableAutoPipelining: true,
    });
    this.#redis.on('error', () => undefined);
    this.#workerRedis = new Redis(options.redisUrl, { maxRetriesPerRequest: null });
    this.#workerRedis.on('error', () => undefined);
    this.#backend = createBullMQBackend({
      connection: this.#redis,
      prefix: this.#prefix,
      countDuplicates: options.countDuplicates ?? false,
    });
    this.idempotency = createBullmqIdempotencyRecords(this.#redis, this.#prefix);
    this.#reservations = createBullmqJobReservations(this.#redis, this.#prefix);
    this.cron = createBullmqCronSchedules({ redis: this.#redis, workerRedis: this.#workerRedis, prefix: this.#prefix });
    this.workflows = createBullmqWorkflowRecords(this.#redis, this.#prefix);
  }

  /** The backend's, but for `x_successor` (server/unserved-extensions.ts). */
  get capabilities() {
    return gatewayCapabilities(this.#backend.capabilities);
  }

  async enqueue(input: GatewayJobInput): Promise<GatewayEnqueueResult> {
    const { extras: _extras, pending, ...job } = input;
    if (pending) throw new InvalidJobInputError([{ path: 'options.pending', message: PENDING_UNSUPPORTED }]);
    refuseUnservedExtension(job, this.capabilities);
    // Every job POSTed here has an OJS priority (0 by default): BullMQ then serves them higher
    // first (adapters/bullmq/bullmq-job-view.ts), where a job without one would be served
    // before every prioritized job.
    const result = await this.#backend.enqueue({ ...job, priority: job.priority ?? 0 });
    return this.#withSide(result, input);
  }

  /** The side record of a job an enqueue wrote (its envelope; meta the backend does not store), written. */
  async #withSide(result: EnqueueResult, { extras, ...job }: GatewayJobInput): Promise<GatewayEnqueueResult> {
    const side: SideRecord = {};
    if (result.outcome !== 'deduplicated') {
      if (extras.envelope && Object.keys(extras.envelope).length > 0) side.envelope = extras.envelope;
      if (!job.unique && job.meta && Object.keys(job.meta).length > 0) side.meta = job.meta as Record<string, JsonValue>;
      if (extras.retry) side.retry = extras.retry;
      // A new job's schedule is the one asked for; a replace_except_schedule keeps the old job's,
      // and an update changes an existing job's, so neither records it.
      const asked = result.outcome === 'created' || (result.outcome === 'replaced' && job.unique?.on_conflict === 'replace');
      if (asked && job.scheduled_at !== undefined) side.scheduledAt = new Date(job.scheduled_at).toISOString();
      try {
        if (Object.keys(side).length > 0) await this.#writeSide(result.job.id, side);
        if (result.outcome === 'updated') await this.#writeSide(result.job.id, { scheduledAt: undefined });
      } catch (error) {
        // The job is in: a retry without an idempotency key would add another.
        throw new BackendError('bullmq', 'the job was enqueued, but its gateway record was not written', { cause: error, written: true });
      }
    }
    return this.#result(result, side);
  }

  /**
   * All-or-nothing (the backend's `enqueueMany`: one script checks every job against what is
   * stored and against the batch's earlier jobs before it writes any), so a `reject` duplicate
   * anywhere leaves nothing of the batch, and no worker can take one of its jobs before all are in.
   * Caller-chosen ids are looked up first only to name the job that has a taken one (the script
   * refuses it too). The side records (envelope, meta) are written after the batch, as after a
   * single PUSH.
   */
  async enqueueBatch(inputs: GatewayJobInput[]): Promise<GatewayEnqueueResult[]> {
    await checkBatch(inputs, {
      extensions: this.capabilities.unique_jobs.extensions ?? [],
      pendingUnsupported: PENDING_UNSUPPORTED,
      isTaken: async (id) => (await this.#backend.getJob(id)) !== null,
    });
    const results = await atBatchPaths(
      this.#backend.enqueueMany(inputs.map(({ extras: _extras, pending: _pending, ...job }) => ({ ...job, priority: job.priority ?? 0 }))),
    );
    return Promise.all(results.map((result, index) => this.#withSide(result, inputs[index]!)));
  }

  async getJob(id: string): Promise<GatewayJob | null> {
    await this.#failLapsed();
    let job = await this.#backend.getJob(id);
    // A job in a queue this process has not opened yet (added with the user's own queue.add):
    // look for BullMQ's queues under the prefix, then once more.
    if (!job && (await this.#discoverQueues())) job = await this.#backend.getJob(id);
    return job ? this.#view(job) : null;
  }

  async cancel(id: string): Promise<GatewayJob> {
    const view = await this.#view(await this.#backend.cancel(id));
    await this.#redis.pexpire(this.#sideKey(id), SIDE_RETENTION_MS);
    return view;
  }

  async activate(id: string): Promise<GatewayJob> {
    const job = await this.#backend.getJob(id);
    if (!job) throw new JobNotFoundError(id);
    throw new InvalidTransitionError(id, job.state, 'available');
  }

  async fetch(request: FetchRequest): Promise<GatewayJob[]> {
    await this.#failLapsed();
    const jobs: GatewayJob[] = [];
    for (const queue of request.queues) {
      this.#backend.queue(queue); // known to the backend's INFO from now on
      const worker = await this.#worker(queue);
      while (jobs.length < request.count) {
        const token = randomUUID();
        const job = (await worker.getNextJob(token, { block: false })) as Job | undefined;
        if (!job) break;
        await this.#writeSide(
          job.id!,
          { token, startedAt: new Date(job.processedOn ?? Date.now()).toISOString(), deadline: undefined },
          { live: true },
        );
        const view = await this.#backend.getJob(job.id!);
        if (!view) continue;
        const fetched = await this.#view(view);
        const now = await this.now();
        if (fetched.envelope.expires_at !== undefined && isExpired(fetched, now)) {
          await this.#discardExpired(job, token);
          continue;
        }
        await this.#reserve(job, token, fetched.envelope, executionDeadline(fetched.envelope, now), now, request.visibilityTimeoutMs);
        jobs.push(fetched);
      }
      if (jobs.length >= request.count) break;
    }
    return jobs;
  }

  async ack(id: string, result: JsonValue | undefined): Promise<GatewayJob> {
    const { job, token } = await this.#claimed(id, 'completed');
    await this.#asHolder(id, 'completed', job.moveToCompleted(result ?? null, token, false));
    await this.#reservations.clear(id);
    await this.#writeSide(id, { token: undefined, error: undefined, reservedUntil: undefined }, { ended: true });
    const view = await this.#viewOf(id);
    await settleWorkflowJob(this, view);
    return view;
  }

  /**
   * BullMQ's `moveToFailed`: its attempts decide whether the job is retried. A job with an OJS
   * policy is given the policy's delay as a `fixed` backoff of this Job instance (not stored:
   * BullMQ's own workers keep the job's backoff), so BullMQ's delayed set schedules the retry.
   */
  async nack(id: string, error: JobError, retry: boolean): Promise<GatewayJob> {
    const { job, token, side, view: before } = await this.#claimed(id, 'retryable');
    const allowed = retry && !isNonRetryable(side.retry, error);
    const delay = allowed && side.retry ? retryDelayMs(side.retry, before.attempt) : undefined;
    // The policy's delay for this one failure, as BullMQ's own fixed backoff on this Job instance
    // (nothing stored: BullMQ's workers keep the job's own backoff).
    if (delay !== undefined) job.opts = { ...job.opts, backoff: { type: 'fixed', delay } };
    const errors = withFailure(side.errors, error, before.attempt, new Date());
    return this.#fail(job, token, error, allowed ? 'retry' : 'discard', { errors, retryDelayMs: delay });
  }

  /** Back to `available` at once: BullMQ's failure (attempts counted) and its retry promoted past the backoff. */
  async release(id: string, error: JobError): Promise<GatewayJob> {
    const { job, token } = await this.#claimed(id, 'available');
    return this.#fail(job, token, error, 'now');
  }

  async heartbeat(id: string, visibilityTimeoutMs: number | null): Promise<GatewayJob> {
    const { job, token } = await this.#claimed(id, 'active');
    const view = await this.#viewOf(id);
    const side = await this.#readSide(id);
    await this.#reserve(job, token, view.envelope, side.deadline ? Number(side.deadline) : null, await this.now(), visibilityTimeoutMs);
    return this.#viewOf(id);
  }

  /**
   * Reserves a job this gateway holds from `now` (Redis's clock): BullMQ's lock for the reservation
   * and a margin, the reservation in the shared set, and what its lapse means in the side record.
   */
  async #reserve(
    job: Job,
    token: string,
    envelope: Record<string, JsonValue>,
    deadline: number | null,
    now: number,
    visibilityTimeoutMs: number | null,
  ): Promise<void> {
    const reservation = reservationOf(envelope, deadline, now, visibilityTimeoutMs);
    // 0: the lock lapsed or another fetch holds it now; nothing was extended.
    if (Number(await job.extendLock(token, reservation.untilMs - now + LOCK_MARGIN_MS)) !== 1)
      throw await this.#lostHold(job.id!, 'active');
    const side: Partial<SideRecord> = { reservedUntil: String(reservation.untilMs), lapse: reservation.lapse };
    if (deadline !== null) side.deadline = String(deadline);
    await this.#writeSide(job.id!, side);
    await this.#reservations.set(job.id!, reservation.untilMs);
  }

  /**
   * Ends an attempt this gateway holds as a failure: `retry` under BullMQ's attempts and backoff,
   * `discard` (an `UnrecoverableError`), or `now`: a retry promoted at once past the backoff.
   */
  async #fail(
    job: Job,
    token: string,
    error: JobError,
    how: 'retry' | 'discard' | 'now',
    recorded: Partial<SideRecord> = {},
  ): Promise<GatewayJob> {
    const id = job.id!;
    const failure = how === 'discard' ? new UnrecoverableError(error.message) : new Error(error.message);
    await this.#asHolder(id, how === 'now' ? 'available' : 'retryable', job.moveToFailed(failure, token, false));
    await this.#reservations.clear(id);
    await this.#writeSide(id, { token: undefined, error, reservedUntil: undefined, ...recorded });
    if (how === 'now' && (await job.getState()) === 'delayed') await job.promote().catch(() => undefined);
    const view = await this.#viewOf(id);
    if (view.state === 'discarded') await this.#redis.pexpire(this.#sideKey(id), SIDE_RETENTION_MS);
    await settleWorkflowJob(this, view);
    return view;
  }

  /**
   * Fails back the jobs any gateway process handed out whose reservation lapsed (job-reservation.ts):
   * a visibility lapse back to `available` at once, an execution timeout under BullMQ's attempts
   * and backoff. Each lapse is taken by one process; one renewed or fetched again since is left.
   */
  async #failLapsed(): Promise<void> {
    const { nowMs, ids } = await this.#reservations.takeLapsed(LAPSED_BATCH);
    for (const id of ids) {
      const side = await this.#readSide(id);
      if (!side.token || side.reservedUntil === undefined || Number(side.reservedUntil) > nowMs) continue;
      const view = await this.#backend.getJob(id);
      if (view?.state !== 'active') continue;
      const job = await Job.fromId(this.#backend.queue(view.queue) as Queue, id);
      if (!job) continue;
      const lapse = side.lapse ?? 'visibility_timeout';
      try {
        await this.#fail(job, side.token, lapseError(lapse), lapse === 'timeout' ? 'retry' : 'now');
      } catch (error) {
        // Ended meanwhile (an ack, BullMQ's stalled check): nothing to fail back.
        if (!(error instanceof InvalidTransitionError || error instanceof JobNotFoundError)) throw error;
      }
    }
  }

  /** What an operator asked of worker `workerId`: `<prefix>:ojs-gateway:worker:<id>`, expiring with the signal. */
  async workerState(workerId: string): Promise<WorkerState> {
    const state = await this.#redis.get(this.#workerKey(workerId));
    return state === 'quiet' || state === 'terminate' ? state : 'running';
  }

  /** `terminate` replaces any signal; `quiet` never replaces `terminate` (set only where none is, or renewed where quiet is). */
  async setWorkerState(workerId: string, state: 'quiet' | 'terminate', retentionMs: number): Promise<void> {
    const key = this.#workerKey(workerId);
    if (state === 'terminate') await this.#redis.set(key, state, 'PX', retentionMs);
    else if ((await this.#redis.set(key, state, 'PX', retentionMs, 'NX')) === null && (await this.#redis.get(key)) === 'quiet') {
      await this.#redis.pexpire(key, retentionMs);
    }
  }

  #workerKey(workerId: string): string {
    return `${this.#prefix}:ojs-gateway:worker:${workerId}`;
  }

  /**
   * BullMQ's failed sets, queue by queue (the one asked, or every queue under the prefix in name
   * order), each newest first: `getFailedCount` and `getFailed`, read on every call.
   */
  async #listDeadLetters(query: { queue?: string; limit: number; offset: number }): Promise<DeadLetterPage> {
    const names = query.queue !== undefined ? [query.queue] : (await this.#queueNames()).sort();
    const queues = names.map((name) => this.#backend.queue(name) as Queue);
    const counts = await Promise.all(queues.map((queue) => queue.getFailedCount()));
    const jobs: GatewayJob[] = [];
    let skip = query.offset;
    for (const [index, queue] of queues.entries()) {
      const count = counts[index]!;
      if (skip >= count) {
        skip -= count;
        continue;
      }
      const wanted = query.limit - jobs.length;
      if (wanted <= 0) break;
      for (const failed of await queue.getFailed(skip, skip + wanted - 1)) {
        const view = failed?.id ? await this.#backend.getJob(failed.id) : null;
        if (view?.state === 'discarded') jobs.push(await this.#view(view));
      }
      skip = 0;
    }
    return { jobs, total: counts.reduce((sum, count) => sum + count, 0) };
  }

  /** BullMQ's own `job.retry('failed')`, its attempts reset: back to wait, attempt 0; the error history stays. */
  async #retryDeadLetter(id: string): Promise<GatewayJob> {
    const job = await this.#deadLetter(id);
    await job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
    const cleared = { token: undefined, error: undefined, retryDelayMs: undefined, startedAt: undefined, expiredAt: undefined };
    await this.#writeSide(id, cleared, { live: true });
    return this.#viewOf(id);
  }

  /** BullMQ's own `job.remove()`, and the gateway's record of the job. */
  async #removeDeadLetter(id: string): Promise<void> {
    const job = await this.#deadLetter(id);
    await job.remove();
    await this.#redis.del(this.#sideKey(id));
  }

  /** BullMQ's job `id`, failed for good. @throws JobNotFoundError otherwise. */
  async #deadLetter(id: string): Promise<Job> {
    const view = await this.#backend.getJob(id);
    if (view?.state !== 'discarded') throw new JobNotFoundError(id);
    const job = await Job.fromId(this.#backend.queue(view.queue) as Queue, id);
    if (!job) throw new JobNotFoundError(id);
    return job;
  }

  /**
   * An expired job this fetch claimed, failed as BullMQ fails a job that must not be retried (an
   * `UnrecoverableError`): discarded, never handed out. BullMQ's limiter counted its claim.
   */
  async #discardExpired(job: Job, token: string): Promise<void> {
    await job.moveToFailed(new UnrecoverableError(EXPIRED_ERROR.message), token, false);
    await this.#writeSide(
      job.id!,
      { token: undefined, startedAt: undefined, error: EXPIRED_ERROR, expiredAt: new Date().toISOString() },
      { ended: true },
    );
  }

  /** BullMQ's own pause: the queue's BullMQ workers stop taking its jobs too. */
  async setPaused(queue: string, paused: boolean): Promise<void> {
    const host = this.#backend.queue(queue) as Queue;
    await (paused ? host.pause() : host.resume());
  }

  async isPaused(queue: string): Promise<boolean> {
    return (this.#backend.queue(queue) as Queue).isPaused();
  }

  /** BullMQ's global rate limit of the queue (its meta hash): BullMQ's own workers of the queue keep it too. */
  async setRateLimit(queue: string, limit: RateLimit): Promise<void> {
    await (this.#backend.queue(queue) as Queue).setGlobalRateLimit(limit.max, limit.durationMs);
  }

  /** Redis's clock (TIME): the one BullMQ's delays and limiter count on. */
  async now(): Promise<number> {
    const [seconds, micros] = await this.#redis.time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  }

  async queueStats(queue: string): Promise<Partial<Record<OjsJobState, number>>> {
    await this.#failLapsed();
    const counts = await this.#backend
      .queue(queue)
      .getJobCounts('wait', 'prioritized', 'active', 'delayed', 'completed', 'failed', 'waiting-children');
    return {
      available: (counts.wait ?? 0) + (counts.prioritized ?? 0),
      active: counts.active ?? 0,
      scheduled: counts.delayed ?? 0,
      completed: counts.completed ?? 0,
      discarded: counts.failed ?? 0,
      pending: counts['waiting-children'] ?? 0,
    };
  }

  async health(): Promise<StoreHealth> {
    const started = Date.now();
    try {
      await this.#redis.ping();
      return { ok: true, type: 'redis', latency_ms: Date.now() - started };
    } catch (error) {
      return { ok: false, type: 'redis', error: (error as Error).message };
    }
  }

  /**
   * Deletes this store's keys: every key of each of its queues (a `<prefix>:<queue>:meta` hash, or
   * a queue in the adapter's registry), the adapter's cross-queue sidecars and the gateway's side
   * hash. Not a blanket `<prefix>:*`: another application's nested prefix (`<prefix>:tenant1`)
   * shares those first characters.
   */
  async reset(): Promise<void> {
    const root = globEscape(`${this.#prefix}:`);
    const queues = new Set([...(await this.#queueNames()), ...(await this.#redis.smembers(`${this.#prefix}:ojs:global:queues`))]);
    const patterns = [...queues].filter(isQueueName).map((queue) => `${root}${globEscape(queue)}:*`);
    patterns.push(`${root}ojs:global:*`, `${root}ojs-gateway:*`, `${root}${globEscape(CRON_QUEUE)}:*`);
    for (const pattern of patterns) {
      let cursor = '0';
      do {
        const [next, keys] = await this.#redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
        cursor = next;
        if (keys.length > 0) await this.#redis.del(...keys);
      } while (cursor !== '0');
    }
  }

  /** The queues BullMQ has under this prefix: `<prefix>:<queue>:meta`, skipping a nested prefix's (`<prefix>:tenant1:jobs:meta`). */
  async #queueNames(): Promise<string[]> {
    const names: string[] = [];
    let cursor = '0';
    do {
      const [next, keys] = await this.#redis.scan(cursor, 'MATCH', `${globEscape(`${this.#prefix}:`)}*:meta`, 'COUNT', 1000);
      cursor = next;
      for (const key of keys) {
        const name = key.slice(this.#prefix.length + 1, -':meta'.length);
        if (isQueueName(name)) names.push(name);
      }
    } while (cursor !== '0');
    return names;
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.#workers.values()].map((worker) => worker.close()));
    await this.cron.close();
    await this.#backend.close();
    await this.#redis.quit().catch(() => this.#redis.disconnect());
    await this.#workerRedis.quit().catch(() => this.#workerRedis.disconnect());
  }

  /**
   * Opens, in the backend, every queue BullMQ has under the prefix (a `<prefix>:<queue>:meta` hash,
   * which BullMQ's Queue and Worker write). A SCAN of the keyspace: at most once a second, and only
   * when INFO misses. True when it found a queue not open before.
   */
  async #discoverQueues(): Promise<boolean> {
    const now = Date.now();
    if (now - this.#discoveredAt < 1000) return false;
    this.#discoveredAt = now;
    let found = false;
    for (const name of await this.#queueNames()) {
      if (this.#opened.has(name)) continue;
      this.#opened.add(name);
      try {
        this.#backend.queue(name);
        found = true;
      } catch {
        // A name BullMQ refuses is not a queue this store can serve; INFO goes on without it.
      }
    }
    return found;
  }

  async #worker(queue: string): Promise<Worker> {
    let worker = this.#workers.get(queue);
    if (worker) {
      // Most recently used last: the Map's order is the eviction order.
      this.#workers.delete(queue);
      this.#workers.set(queue, worker);
    } else {
      for (const [name, idle] of this.#workers) {
        if (this.#workers.size < MAX_OPEN_WORKERS) break;
        this.#workers.delete(name);
        await idle.close().catch(() => undefined);
      }
      // No processor: jobs are taken with getNextJob and ended by the HTTP worker's ack/nack.
      worker = new Worker(queue, null, { connection: this.#workerRedis, prefix: this.#prefix, autorun: false });
      worker.on('error', () => undefined);
      // A manual worker runs no stalled-job check unless started (BullMQ's "manually fetching
      // jobs" pattern): a job whose HTTP worker stopped renewing its lock goes back to wait.
      void worker.startStalledCheckTimer().catch(() => undefined);
      this.#workers.set(queue, worker);
    }
    return worker;
  }

  /** The active job fetched here and its lock token; anything else is OJS's `conflict`. */
  async #claimed(id: string, to: OjsJobState): Promise<{ job: Job; token: string; side: SideRecord; view: OjsJob }> {
    // A reservation that lapsed is failed back first: a late ack, nack or heartbeat then meets a
    // job that is no longer the caller's (409), as on the other stores.
    await this.#failLapsed();
    const view = await this.#backend.getJob(id);
    if (!view) throw new JobNotFoundError(id);
    const side = await this.#readSide(id);
    if (view.state !== 'active' || !side.token) throw new InvalidTransitionError(id, view.state, to);
    const job = await Job.fromId(this.#backend.queue(view.queue) as Queue, id);
    if (!job) throw new JobNotFoundError(id);
    return { job, token: side.token, side, view };
  }

  /**
   * A move of a job this gateway fetched, BullMQ's refusal of it translated: the lock lapsed
   * (a late ack or nack after the visibility timeout), another fetch holds it, or the job left
   * the active state or was removed meanwhile. Each is OJS's `conflict` (or `not_found`): the job
   * is no longer the caller's, which is no server failure.
   */
  async #asHolder<T>(id: string, to: OjsJobState, move: Promise<T>): Promise<T> {
    try {
      return await move;
    } catch (error) {
      if (isLostHold(error)) throw await this.#lostHold(id, to);
      throw error;
    }
  }

  /** The error for a job whose hold this gateway lost: its state now, or not found. */
  async #lostHold(id: string, to: OjsJobState): Promise<Error> {
    const view = await this.#backend.getJob(id);
    return view ? new InvalidTransitionError(id, view.state, to) : new JobNotFoundError(id);
  }

  #sideKey(id: string): string {
    return `${this.#prefix}:ojs-gateway:job:${id}`;
  }

  async #readSide(id: string): Promise<SideRecord> {
    const raw = await this.#redis.hgetall(this.#sideKey(id));
    const side: Record<string, unknown> = {};
    for (const [field, value] of Object.entries(raw)) {
      side[field] = JSON_FIELDS.has(field as keyof SideRecord) ? JSON.parse(value) : value;
    }
    return side as SideRecord;
  }

  /** Writes the fields `patch` names (an `undefined` one is deleted), each on its own: no read, so no lost update. */
  /** `ended`: the job ended through the gateway, its record expires; `live`: it runs again (a retry of an ended job), it no longer does. */
  async #writeSide(id: string, patch: Partial<SideRecord>, options: { ended?: boolean; live?: boolean } = {}): Promise<void> {
    const key = this.#sideKey(id);
    const set: Record<string, string> = {};
    const removed: string[] = [];
    for (const [field, value] of Object.entries(patch)) {
      if (value === undefined) removed.push(field);
      else set[field] = JSON_FIELDS.has(field as keyof SideRecord) ? JSON.stringify(value) : String(value);
    }
    const multi = this.#redis.multi();
    if (Object.keys(set).length > 0) multi.hset(key, set);
    if (removed.length > 0) multi.hdel(key, ...removed);
    if (options.ended) multi.pexpire(key, SIDE_RETENTION_MS);
    if (options.live) multi.persist(key);
    await multi.exec();
  }

  async #viewOf(id: string): Promise<GatewayJob> {
    const job = await this.#backend.getJob(id);
    if (!job) throw new JobNotFoundError(id);
    return this.#view(job);
  }

  /** `side`: what this enqueue recorded for its new job (a new job has nothing else recorded: no read needed). */
  async #result(result: EnqueueResult, side: SideRecord): Promise<GatewayEnqueueResult> {
    if (result.outcome === 'replaced') {
      const replaced: GatewayEnqueueResult = {
        outcome: 'replaced',
        job: await this.#view(result.job, side),
        replaced: await this.#view(result.replaced),
      };
      if (result.also_replaced) replaced.also_replaced = await Promise.all(result.also_replaced.map((job) => this.#view(job)));
      return replaced;
    }
    if (result.outcome === 'updated') return { outcome: 'updated', job: await this.#view(result.job), changed: result.changed };
    if (result.outcome === 'created' && result.wouldBe !== undefined) {
      return { outcome: 'created', job: await this.#view(result.job, side), wouldBe: result.wouldBe, existingJobId: result.existingJobId! };
    }
    return { outcome: result.outcome, job: await this.#view(result.job, result.outcome === 'created' ? side : undefined) };
  }

  /** The adapter's envelope view, plus what BullMQ records of the run (start, result, failure) and the kept fields. */
  async #view(job: OjsJob, known?: SideRecord): Promise<GatewayJob> {
    const side = known ?? (await this.#readSide(job.id));
    const view: GatewayJob = { ...job, enqueued_at: job.created_at, envelope: side.envelope ?? {} };
    if (side.meta && Object.keys(job.meta).length === 0) view.meta = side.meta;
    if (side.errors) view.errors = side.errors;
    if (side.retryDelayMs !== undefined) view.retry_delay_ms = side.retryDelayMs;
    // The schedule asked for, to the millisecond, while it is the job's schedule: its first run, not
    // moved by a retry's backoff, and BullMQ's due time within the drift of it.
    if (
      side.scheduledAt !== undefined &&
      job.attempt <= 1 &&
      job.state !== 'retryable' &&
      Math.abs(Date.parse(job.scheduled_at) - Date.parse(side.scheduledAt)) <= SCHEDULE_DRIFT_MS
    ) {
      view.scheduled_at = side.scheduledAt;
    }
    if (job.state === 'available' || job.state === 'scheduled') {
      // Waiting for its next attempt: the last failure stays readable, as on memory.
      if (side.error) view.error = side.error;
      return view;
    }
    if (side.expiredAt !== undefined && job.state === 'discarded') {
      // It never ran: no start, no completion.
      delete view.completed_at;
      view.discarded_at = side.expiredAt;
      view.error = side.error ?? EXPIRED_ERROR;
      return view;
    }
    const host = await Job.fromId(this.#backend.queue(job.queue) as Queue, job.id);
    if (host?.processedOn) view.started_at = new Date(host.processedOn).toISOString();
    else if (side.startedAt) view.started_at = side.startedAt;
    if (job.state === 'completed' && host && host.returnvalue !== undefined && host.returnvalue !== null)
      view.result = host.returnvalue as JsonValue;
    if (job.state === 'retryable' || job.state === 'discarded') {
      view.error = side.error ?? { type: host?.stacktrace?.length ? 'Error' : 'error', message: host?.failedReason ?? 'failed' };
    }
    return view;
  }
}

/**
 * BullMQ's refusals of a move by a worker that no longer holds the job (its finishedErrors):
 * missing job (-1), missing lock (-2), not in the active state (-3), lock held by another token
 * (-6). Older 6.x versions set no `code`: their messages are matched.
 */
const LOST_HOLD_CODES = new Set([-1, -2, -3, -6]);
const LOST_HOLD_MESSAGE = /^(Missing key for job |Missing lock for job |Lock mismatch for job |Job \S+ is not in the \S+ state)/;

function isLostHold(error: unknown): boolean {
  if (!(error instanceof Error) || error instanceof UnrecoverableError) return false;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'number' ? LOST_HOLD_CODES.has(code) : LOST_HOLD_MESSAGE.test(error.message);
}

/** A BullMQ queue name as it appears in a key: BullMQ refuses ":" in queue names. */
function isQueueName(name: string): boolean {
  return name !== '' && !name.includes(':');
}

/** `value` matched literally by a SCAN MATCH pattern. */
function globEscape(value: string): string {
  return value.replace(/[*?[\]\\]/g, '\\$&');
}
