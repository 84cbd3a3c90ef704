/**
 * The gateway over Graphile Worker. A job POSTed here is an ordinary Graphile job (task
 * identifier = OJS type, payload = the payload of `src/ojs-args-payload.ts`) added by the
 * adapter's `createGraphileWorkerBackend`, so the user's task runners process it and
 * `makeUniqueWorkerUtils(...).addJob` of the same job meets it as a duplicate.
 *
 * The worker protocol takes Graphile's own lock (graphile-worker-job-fetcher.ts): a job an HTTP
 * worker holds is never run by a Graphile runner, and the other way round. A job added with
 * Graphile's own `addJob` is fetchable too, from its named queue or `default`; its OJS id is its
 * Graphile id, and INFO knows it only while Graphile keeps its row (Graphile deletes a completed
 * job).
 *
 * Reservations: Graphile's lock is taken back after four hours (its stale-lock recovery). The
 * shorter OJS visibility timeout is a reservation in the job's gateway row, shared by every
 * gateway process over the schema (as the lock owner is): a job whose reservation lapsed without
 * a heartbeat is failed back (retried) at the next fetch, ack, nack or heartbeat of any of them.
 */
import { makeWorkerUtils, type WorkerUtils } from 'graphile-worker';
import { userInfo } from 'node:os';
import pg from 'pg';
import { createGraphileWorkerBackend, type GraphileWorkerBackend } from '../adapters/graphile-worker/index.js';
import { withDefaultUser } from '../adapters/graphile-worker/graphile-worker-pg.js';
import { GraphileWorkerSql } from '../adapters/graphile-worker/graphile-worker-sql.js';
import { installGatewaySchema } from './graphile-worker-gateway-schema.js';
import { createGraphileJobFetcher, type GraphileJobFetcher } from './graphile-worker-job-fetcher.js';
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
  JobError,
  JobErrorEntry,
  RetryPolicy,
  StoreHealth,
  WorkerState,
} from './gateway-store.js';
import { EXECUTION_TIMEOUT_ERROR, VISIBILITY_TIMEOUT_ERROR, executionDeadline, visibilityMs } from './job-reservation.js';
import { atBatchPaths, checkBatch } from './batch-input.js';
import { isNonRetryable, retryDelayMs } from './retry-policy.js';
import { withFailure } from './error-history.js';
import { EXPIRED_ERROR, isExpired } from './job-expiry.js';
import type { RateLimit } from './queue-rate-limit.js';
import { createGraphileIdempotencyRecords, type GraphileIdempotencyRecords } from './graphile-worker-idempotency-records.js';
import { uuidv7 } from '../src/uuid-v7.js';
import { createGraphileCronSchedules, type GraphileCronSchedules } from './graphile-worker-cron-schedules.js';
import { createGraphileWorkflowRecords, type GraphileWorkflowRecords } from './graphile-worker-workflow-records.js';
import { settleWorkflowJob } from './workflow-advance.js';
import { gatewayCapabilities, refuseUnservedExtension } from './unserved-extensions.js';

export interface GraphileWorkerGatewayStoreOptions {
  databaseUrl: string;
  /** Graphile Worker's schema. (Default: `graphile_worker`.) */
  graphileSchema?: string;
  /** The adapter's schema. (Default: `ojs_unique`.) */
  uniqueSchema?: string;
  /** Size of the gateway's pool. (Default: 10.) */
  maxPoolSize?: number;
  /**
   * Send the enqueue's statements as named prepared statements (and Graphile's own, for a cancel
   * of a job added without the adapter); false behind PgBouncer in transaction mode before 1.21.
   * (Default: true, as Graphile Worker.)
   */
  preparedStatements?: boolean;
  /**
   * Count each duplicate PUSH on the job it met: `duplicate_count` and `last_duplicate_at` in the
   * job's JSON (docs/decisions.md, "Duplicate counts"). (Default: false.)
   */
  countDuplicates?: boolean;
}

interface Side {
  envelope?: Record<string, JsonValue>;
  retry?: RetryPolicy;
  started_at?: string;
  result?: JsonValue;
  error?: JobError;
  errors?: JobErrorEntry[];
  /** The delay the last failure's retry was given (the policy's). */
  retry_delay_ms?: number;
  /** When its dead letter was deleted (gateway-remove-dead-letter.sql): INFO no longer finds it. */
  removed_at?: string;
  /** The attempt an HTTP worker started: a cancel fences a running job (attempts = max_attempts), which is not its attempt. */
  attempt?: number;
  /** When an HTTP worker's nack discarded the job: Graphile keeps a permanently failed row, and no finish time. */
  finished_at?: string;
  /** When a fetch found it expired and discarded it (job-expiry.ts). */
  expired_at?: string;
  /** The attempt's execution deadline (its start plus `timeout_ms`), ms on the database's clock; null: none. */
  deadline_ms?: number | null;
}

const PENDING_UNSUPPORTED = 'pending jobs are not supported on the Graphile Worker backend';
/** Lapsed reservations failed back per call: the rest at the next one. */
const LAPSED_BATCH = 100;

/** What the gateway records beside a job this enqueue wrote (a duplicate's job is another request's): null when nothing. */
function sideOf(result: EnqueueResult, extras: GatewayJobInput['extras']): Side | null {
  if (result.outcome === 'deduplicated') return null;
  const side: Side = {};
  if (extras.envelope && Object.keys(extras.envelope).length > 0) side.envelope = extras.envelope;
  if (extras.retry) side.retry = extras.retry;
  return Object.keys(side).length > 0 ? side : null;
}

export function createGraphileWorkerGatewayStore(options: GraphileWorkerGatewayStoreOptions): GatewayStore {
  return new GraphileWorkerGatewayStore(options);
}

class GraphileWorkerGatewayStore implements GatewayStore {
  readonly backend = 'graphile-worker' as const;
  readonly #pool: pg.Pool;
  readonly #backend: GraphileWorkerBackend;
  readonly #fetcher: GraphileJobFetcher;
  #ready: Promise<void> | null = null;
  /** Graphile's own WorkerUtils, for the jobs the adapter has no ledger row of (added with Graphile's `addJob`). */
  #utils: Promise<WorkerUtils> | null = null;
  readonly #noPreparedStatements: boolean;
  readonly idempotency: GraphileIdempotencyRecords;
  readonly deadLetters: DeadLetters = {
    list: (query) => this.#listDeadLetters(query),
    retry: (id) => this.#retryDeadLetter(id),
    remove: (id) => this.#removeDeadLetter(id),
  };
  readonly cron: GraphileCronSchedules;
  readonly workflows: GraphileWorkflowRecords;

  constructor(options: GraphileWorkerGatewayStoreOptions) {
    // The OS user where the URL names none and $USER is unset, as the adapter's own pools do.
    const connectionString = withDefaultUser(options.databaseUrl, () => userInfo().username);
    this.#pool = new pg.Pool({ connectionString, max: options.maxPoolSize ?? 10, connectionTimeoutMillis: 10_000 });
    this.#pool.on('error', () => undefined);
    this.#pool.on('connect', (client) => client.on('error', () => undefined));
    this.#backend = createGraphileWorkerBackend({
      pgPool: this.#pool,
      ...(options.graphileSchema ? { workerSchema: options.graphileSchema } : {}),
      ...(options.uniqueSchema ? { uniqueSchema: options.uniqueSchema } : {}),
      ...(options.preparedStatements === undefined ? {} : { preparedStatements: options.preparedStatements }),
      countDuplicates: options.countDuplicates ?? false,
    });
    this.#noPreparedStatements = options.preparedStatements === false;
    this.#fetcher = createGraphileJobFetcher(this.#pool, this.#backend.schemas);
    this.idempotency = createGraphileIdempotencyRecords(this.#pool, this.#backend.schemas, () => this.#start());
    this.cron = createGraphileCronSchedules(this.#pool, this.#backend.schemas, () => this.#start());
    this.workflows = createGraphileWorkflowRecords(this.#pool, this.#backend.schemas, () => this.#start());
  }

  /** The backend's, but for `x_successor` (server/unserved-extensions.ts). */
  get capabilities() {
    return gatewayCapabilities(this.#backend.capabilities);
  }

  /** Both schemas migrated (the backend's start-up), then the gateway's own tables (graphile-worker-gateway-schema.ts). */
  #start(): Promise<void> {
    this.#ready ??= (async () => {
      await this.#backend.ready();
      const client = await this.#pool.connect();
      try {
        await installGatewaySchema(client, GraphileWorkerSql.for(this.#backend.schemas));
      } finally {
        client.release();
      }
    })().catch((error: unknown) => {
      this.#ready = null;
      throw error;
    });
    return this.#ready;
  }

  async enqueue(input: GatewayJobInput): Promise<GatewayEnqueueResult> {
    const { extras, pending, ...job } = input;
    if (pending) throw new InvalidJobInputError([{ path: 'options.pending', message: PENDING_UNSUPPORTED }]);
    refuseUnservedExtension(job, this.capabilities);
    await this.#start();
    // OJS ids are UUIDv7; the adapter would otherwise use Graphile's numeric id.
    const result = await this.#backend.enqueue({ ...job, id: job.id ?? uuidv7() });
    const side = sideOf(result, extras);
    if (side) {
      await this.#fetcher.writeSide(result.job.id, side as Record<string, JsonValue>).catch((error: unknown) => {
        // The job is in: a retry without an idempotency key would add another.
        throw new BackendError('graphile-worker', 'the job was enqueued, but its gateway row was not written', {
          cause: error,
          written: true,
        });
      });
    }
    return this.#result(result, side ?? {});
  }

  /**
   * All-or-nothing in one transaction (the backend's `enqueueMany`, the adapter's `addJobs`): a
   * `reject` duplicate anywhere rolls back every job of the batch and its gateway rows, and no
   * worker, HTTP or Graphile, can take a job of the batch before it commits.
   */
  async enqueueBatch(inputs: GatewayJobInput[]): Promise<GatewayEnqueueResult[]> {
    await this.#start();
    // Caller-chosen ids are looked up first only to name the job that has a taken one: the
    // transaction refuses a taken id too (then without its index).
    await checkBatch(inputs, {
      extensions: this.capabilities.unique_jobs.extensions ?? [],
      pendingUnsupported: PENDING_UNSUPPORTED,
      isTaken: async (id) => (await this.#backend.getJob(id)) !== null,
    });
    const sides: (Side | null)[] = [];
    const results = await atBatchPaths(
      this.#backend.enqueueMany(
        inputs.map(({ extras: _extras, pending: _pending, ...job }) => ({ ...job, id: job.id ?? uuidv7() })),
        {
          beforeCommit: async (client, done) => {
            for (const [index, result] of done.entries()) {
              const side = sideOf(result, inputs[index]!.extras);
              sides[index] = side;
              if (side) await this.#fetcher.writeSide(result.job.id, side as Record<string, JsonValue>, client);
            }
          },
        },
      ),
    );
    return Promise.all(results.map((result, index) => this.#result(result, sides[index] ?? {})));
  }

  /** A reservation that lapsed is failed back first, so the job reads as it now is. */
  async getJob(id: string): Promise<GatewayJob | null> {
    await this.#start();
    await this.#failLapsed();
    return this.#read(id);
  }

  async #read(id: string): Promise<GatewayJob | null> {
    const job = (await this.#backend.getJob(id)) ?? (await this.#fetcher.readGraphileJob(id));
    if (!job) return null;
    const side = (await this.#fetcher.readSide(job.id)) as Side;
    return side.removed_at ? null : this.#view(job, side);
  }

  async cancel(id: string): Promise<GatewayJob> {
    await this.#start();
    try {
      return await this.#view(await this.#backend.cancel(id));
    } catch (error) {
      if (!(error instanceof JobNotFoundError)) throw error;
      return this.#cancelGraphileJob(id, error);
    }
  }

  /**
   * A job added with Graphile's own `addJob` (no ledger row), cancelled as Graphile removes a job:
   * `completeJobs` deletes it unless a worker holds its lock; a held one is a conflict, as OJS
   * CANCEL of a running job is where the host cannot fence it. Graphile keeps no record of a
   * removed job, so INFO knows it no longer (as after any completion).
   */
  async #cancelGraphileJob(id: string, notFound: JobNotFoundError): Promise<GatewayJob> {
    const row = await this.#fetcher.readGraphileJob(id);
    if (!row) throw notFound;
    if (row.state === 'completed' || row.state === 'discarded' || row.state === 'cancelled') {
      throw new InvalidTransitionError(id, row.state, 'cancelled');
    }
    // A failed start is not kept: the next cancel tries again.
    this.#utils ??= makeWorkerUtils({
      pgPool: this.#pool,
      schema: this.#backend.schemas.workerSchema,
      noPreparedStatements: this.#noPreparedStatements,
    }).catch((error: unknown) => {
      this.#utils = null;
      throw error;
    });
    const removed = await (await this.#utils).completeJobs([id]);
    if (removed.length === 0) {
      const now = await this.#fetcher.readGraphileJob(id);
      if (!now) throw notFound;
      throw new InvalidTransitionError(id, now.locked_by ? 'active' : now.state, 'cancelled');
    }
    const view = await this.#view(row);
    return { ...view, state: 'cancelled', completed_at: new Date().toISOString() };
  }

  async activate(id: string): Promise<GatewayJob> {
    const job = await this.getJob(id);
    if (!job) throw new JobNotFoundError(id);
    throw new InvalidTransitionError(id, job.state, 'available');
  }

  async fetch(request: FetchRequest): Promise<GatewayJob[]> {
    await this.#start();
    await this.#failLapsed();
    const jobs: GatewayJob[] = [];
    for (const queue of request.queues) {
      while (jobs.length < request.count) {
        const claimed = await this.#fetcher.claim(queue);
        if (!claimed) break;
        const id = claimed.ojsId ?? claimed.jobId;
        const job = await this.#read(id);
        // The database's clock, for an expiry or an execution deadline.
        const now = job && (job.envelope.expires_at !== undefined || job.envelope.timeout_ms !== undefined) ? await this.now() : null;
        const deadline = job && now !== null ? executionDeadline(job.envelope, now) : null;
        await this.#fetcher.reserve(id, claimed.jobId, visibilityMs(job?.envelope ?? {}, request.visibilityTimeoutMs), deadline);
        if (!job) continue;
        if (job.envelope.expires_at !== undefined && isExpired(job, now!)) {
          await this.#discardExpired(id, claimed.jobId);
          continue;
        }
        await this.#fetcher.writeSide(id, {
          started_at: new Date().toISOString(),
          attempt: job.attempt,
          error: null,
          result: null,
          deadline_ms: deadline,
        });
        jobs.push((await this.#read(id))!);
      }
      if (jobs.length >= request.count) break;
    }
    return jobs;
  }

  async ack(id: string, result: JsonValue | undefined): Promise<GatewayJob> {
    const { graphileId, state, job: before } = await this.#held(id, 'completed');
    if (result !== undefined) await this.#fetcher.writeSide(id, { result, error: null });
    if (!(await this.#fetcher.complete(graphileId))) throw new InvalidTransitionError(id, state, 'completed');
    const after = await this.#read(id);
    if (after) {
      await settleWorkflowJob(this, after);
      return after;
    }
    // A job added with Graphile's own addJob: Graphile deleted its row, and no ledger keeps it.
    const completed: GatewayJob = { ...before, state: 'completed', completed_at: new Date().toISOString() };
    delete completed.error;
    if (result !== undefined) completed.result = result;
    return completed;
  }

  async nack(id: string, error: JobError, retry: boolean): Promise<GatewayJob> {
    const { graphileId, state, side, job } = await this.#held(id, 'retryable');
    const allowed = retry && !isNonRetryable(side.retry, error);
    const delay = allowed && side.retry ? retryDelayMs(side.retry, job.attempt) : null;
    await this.#fetcher.writeSide(id, {
      error: error as unknown as JsonValue,
      errors: withFailure(side.errors, error, job.attempt, new Date()) as unknown as JsonValue,
      retry_delay_ms: delay,
    });
    if (!(await this.#fetcher.fail(graphileId, error.message, { permanent: !allowed, retryDelayMs: delay }))) {
      throw new InvalidTransitionError(id, state, 'retryable');
    }
    return this.#afterFailure(id);
  }

  async heartbeat(id: string, visibilityTimeoutMs: number | null): Promise<GatewayJob> {
    const { graphileId, state, side, job } = await this.#held(id, 'active');
    if (!(await this.#fetcher.touch(graphileId))) throw new InvalidTransitionError(id, state, 'active');
    const visibility = visibilityMs(job.envelope, visibilityTimeoutMs);
    if (!(await this.#fetcher.reserve(id, graphileId, visibility, side.deadline_ms ?? null))) {
      throw new InvalidTransitionError(id, state, 'active');
    }
    return (await this.#read(id))!;
  }

  /** Back to `available` at once (Graphile's failJobs with no delay): its attempt counted, the last one discarded. */
  async release(id: string, error: JobError): Promise<GatewayJob> {
    const { graphileId, state } = await this.#held(id, 'available');
    await this.#fetcher.writeSide(id, { error: error as unknown as JsonValue });
    if (!(await this.#fetcher.fail(graphileId, error.message, { permanent: false, retryDelayMs: 0 }))) {
      throw new InvalidTransitionError(id, state, 'available');
    }
    return this.#afterFailure(id);
  }

  /** The job a failure left: a discarded one records when (Graphile keeps no finish time). */
  async #afterFailure(id: string): Promise<GatewayJob> {
    const failed = (await this.#read(id))!;
    if (failed.state !== 'discarded') return failed;
    await this.#fetcher.writeSide(id, { finished_at: new Date().toISOString() });
    const discarded = (await this.#read(id))!;
    await settleWorkflowJob(this, discarded);
    return discarded;
  }

  /** The gateway's worker signals (gateway_workers), shared by every gateway process over the schema. */
  async workerState(workerId: string): Promise<WorkerState> {
    await this.#start();
    return (await this.#fetcher.workerState(workerId)) ?? 'running';
  }

  async setWorkerState(workerId: string, state: 'quiet' | 'terminate', retentionMs: number): Promise<void> {
    await this.#start();
    await this.#fetcher.setWorkerState(workerId, state, retentionMs);
  }

  /** Graphile's permanently failed rows, in the order they were added (gateway-dead-letters.sql). */
  async #listDeadLetters(query: { queue?: string; limit: number; offset: number }): Promise<DeadLetterPage> {
    await this.#start();
    const { total, ids } = await this.#fetcher.deadLetters(query.queue ?? null, query.limit, query.offset);
    const jobs = await Promise.all(ids.map((id) => this.getJob(id)));
    return { jobs: jobs.filter((job): job is GatewayJob => job !== null), total };
  }

  /** Rescheduled now with attempts 0, as Graphile's reschedule_jobs; the error history stays. */
  async #retryDeadLetter(id: string): Promise<GatewayJob> {
    const graphileId = await this.#deadLetter(id);
    if (!(await this.#fetcher.retryDeadLetter(graphileId))) throw new JobNotFoundError(id);
    const cleared = {
      error: null,
      retry_delay_ms: null,
      started_at: null,
      expired_at: null,
      finished_at: null,
      attempt: null,
      result: null,
    };
    await this.#fetcher.writeSide(id, cleared);
    return (await this.getJob(id))!;
  }

  async #removeDeadLetter(id: string): Promise<void> {
    const graphileId = await this.#deadLetter(id);
    if (!(await this.#fetcher.removeDeadLetter(graphileId, id))) throw new JobNotFoundError(id);
  }

  /** The Graphile id of dead letter `id`. @throws JobNotFoundError when `id` is no discarded job. */
  async #deadLetter(id: string): Promise<string> {
    await this.#start();
    if ((await this.getJob(id))?.state !== 'discarded') throw new JobNotFoundError(id);
    return (await this.#backend.graphileJobId(id)) ?? id;
  }

  /** An expired job this fetch claimed, failed permanently as a NACK without retry would: discarded, never handed out. */
  async #discardExpired(id: string, graphileId: string): Promise<void> {
    await this.#fetcher.writeSide(id, { error: EXPIRED_ERROR as unknown as JsonValue, expired_at: new Date().toISOString() });
    await this.#fetcher.fail(graphileId, EXPIRED_ERROR.message, { permanent: true, retryDelayMs: null });
  }

  /**
   * The gateway's pause (gateway_queues, read by its fetch). Graphile Worker has no pause of its
   * own for a queue (its named queues' lock serialises a queue, and its stale-lock recovery
   * would lift one held for a pause), so Graphile's own workers still run the queue's jobs.
   */
  async setPaused(queue: string, paused: boolean): Promise<void> {
    await this.#start();
    await this.#fetcher.setPaused(queue, paused);
  }

  async isPaused(queue: string): Promise<boolean> {
    await this.#start();
    return this.#fetcher.isPaused(queue);
  }

  /** The gateway's rate limit (gateway_queues, counted by its fetch); Graphile's own workers do not keep it. */
  async setRateLimit(queue: string, limit: RateLimit): Promise<void> {
    await this.#start();
    await this.#fetcher.setRateLimit(queue, limit.max, limit.durationMs);
  }

  /** PostgreSQL's clock: the one run_at is compared with. */
  async now(): Promise<number> {
    await this.#start();
    return this.#fetcher.now();
  }

  async queueStats(queue: string): Promise<Partial<Record<OjsJobState, number>>> {
    await this.#start();
    await this.#failLapsed();
    return this.#fetcher.queueStats(queue);
  }

  async health(): Promise<StoreHealth> {
    const started = Date.now();
    try {
      await this.#pool.query('select 1');
      return { ok: true, type: 'postgresql', latency_ms: Date.now() - started };
    } catch (error) {
      return { ok: false, type: 'postgresql', error: (error as Error).message };
    }
  }

  /** Deletes the rows of the schemas this store serves (Graphile's jobs and queues, the ledger, the gateway's table). */
  async reset(): Promise<void> {
    await this.#start();
    const { workerSchema, uniqueSchema } = this.#backend.schemas;
    const { rows } = await this.#pool.query<{ name: string }>(
      `select format('%I.%I', schemaname, tablename) as name from pg_tables
        where (schemaname = $1 and tablename in ('_private_jobs', '_private_job_queues'))
           or (schemaname = $2 and tablename not in ('migrations', 'settings'))`,
      [workerSchema, uniqueSchema],
    );
    if (rows.length > 0) await this.#pool.query(`truncate ${rows.map((row) => row.name).join(', ')}`);
  }

  async close(): Promise<void> {
    if (this.#utils) await (await this.#utils.catch(() => null))?.release();
    await this.idempotency.close();
    await this.workflows.close();
    await this.cron.close();
    await this.#backend.close();
    await this.#pool.end();
  }

  /**
   * Fails back the jobs any gateway process handed out whose reservation lapsed (job-reservation.ts):
   * past the execution deadline, a failure under the job's retry policy (Graphile's backoff
   * unless it gave one); otherwise back to `available` at once. Each lapse is taken by one process.
   */
  async #failLapsed(): Promise<void> {
    const lapsed = await this.#fetcher.takeLapsed(LAPSED_BATCH);
    if (lapsed.length === 0) return;
    const now = await this.now();
    for (const { id, jobId } of lapsed) {
      const side = (await this.#fetcher.readSide(id)) as Side;
      const timedOut = typeof side.deadline_ms === 'number' && side.deadline_ms <= now;
      const error = timedOut ? EXECUTION_TIMEOUT_ERROR : VISIBILITY_TIMEOUT_ERROR;
      const delay = !timedOut ? 0 : side.retry ? retryDelayMs(side.retry, side.attempt ?? 1) : null;
      await this.#fetcher.writeSide(id, { error: error as unknown as JsonValue });
      if (!(await this.#fetcher.fail(jobId, error.message, { permanent: false, retryDelayMs: delay }))) continue;
      // Its last attempt: discarded (Graphile keeps no finish time).
      if ((await this.#read(id))?.state === 'discarded') await this.#fetcher.writeSide(id, { finished_at: new Date().toISOString() });
    }
  }

  /** The Graphile id of an active job this gateway holds, or OJS's `conflict`. */
  async #held(id: string, to: OjsJobState): Promise<{ graphileId: string; state: OjsJobState; side: Side; job: GatewayJob }> {
    await this.#start();
    // A reservation that lapsed is failed back first, as memory does: a late ack, nack or
    // heartbeat then meets a job that is no longer the caller's (409), not one it still holds.
    await this.#failLapsed();
    const job = await this.#read(id);
    if (!job) throw new JobNotFoundError(id);
    if (job.state !== 'active') throw new InvalidTransitionError(id, job.state, to);
    const graphileId = (await this.#backend.graphileJobId(id)) ?? id;
    return { graphileId, state: job.state, side: (await this.#fetcher.readSide(id)) as Side, job };
  }

  /** `side`: what this enqueue recorded for its new job (a new job has nothing else recorded: no read needed). */
  async #result(result: EnqueueResult, side: Side): Promise<GatewayEnqueueResult> {
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

  async #view(job: OjsJob & { last_error?: string | null; locked_by?: string | null }, known?: Side): Promise<GatewayJob> {
    const side = known ?? ((await this.#fetcher.readSide(job.id)) as Side);
    const { last_error: lastError, locked_by: _lockedBy, ...envelopeView } = job;
    const view: GatewayJob = { ...envelopeView, enqueued_at: job.created_at, envelope: side.envelope ?? {} };
    if (side.started_at) view.started_at = side.started_at;
    if (side.errors) view.errors = side.errors;
    if (side.retry_delay_ms !== undefined) view.retry_delay_ms = side.retry_delay_ms;
    if (job.state === 'cancelled' && side.attempt !== undefined) view.attempt = side.attempt;
    // A permanent failure sets Graphile's attempts to max_attempts (as permanentlyFailJobs): the
    // attempt that ran is the one an HTTP worker's nack discarded.
    if (job.state === 'discarded' && side.finished_at && side.attempt !== undefined) view.attempt = side.attempt;
    if (job.state === 'discarded' && !view.completed_at && side.finished_at) view.completed_at = side.finished_at;
    if (job.state === 'discarded' && side.expired_at) {
      // It never ran: no start, no completion.
      delete view.completed_at;
      delete view.started_at;
      view.discarded_at = side.expired_at;
    }
    if (job.state === 'completed' && side.result !== undefined) view.result = side.result;
    // The last failure, while the job is failed or waits for its next attempt (`available` or
    // `scheduled` once its backoff is due or set), as on memory.
    if (job.state !== 'completed' && job.state !== 'active' && job.state !== 'cancelled') {
      const error = side.error ?? (lastError ? { type: 'error', message: lastError } : undefined);
      if (error) view.error = error;
    }
    return view;
  }
}
