/**
 * What the OJS HTTP gateway needs from a backend: the unique-jobs PUSH/INFO/CANCEL of
 * `UniqueJobsBackend`, plus the worker protocol (fetch, ack, nack, heartbeat), the events level 0
 * queue counts, health and the test reset. The events level 0 lists are the server's own record of
 * what went through it. One implementation per backend, each built on that backend's
 * public API: memory (`memory-gateway-store.ts`), BullMQ and Graphile Worker.
 *
 * `args` here is the host payload (see `src/ojs-args-payload.ts`): the server maps OJS `args` to it
 * before `enqueue` and back when it answers, so every entry point computes keys over one form.
 */
import type { JobInput, JsonValue, OjsJob } from '../src/job.js';
import type { OjsJobState } from '../src/job-state.js';
import type { UniqueJobsCapabilities } from '../src/unique-jobs-backend.js';
import type { UpdateField } from '../src/unique-policy.js';
import type { WouldBe } from '../src/report-only.js';
import type { RateLimit } from './queue-rate-limit.js';
import type { RetryPolicy } from './retry-policy.js';
import type { CronSchedules } from './cron-schedules.js';
import type { WorkflowRecord } from './workflow-record.js';

/** Envelope fields the gateway keeps beside a job: what OJS reports but the host does not store. */
export interface GatewayExtras {
  /** Unknown top-level envelope fields (`x_…`) and OJS options the host has no field for (`timeout_ms`, `tags`, `retry` …). */
  envelope?: Record<string, JsonValue>;
  /**
   * Retry policy read from `options.retry` (retry-options.ts), only when it gives more than
   * `max_attempts`. Absent, the host's backoff applies: BullMQ's job backoff, Graphile Worker's own
   * schedule; on memory OJS's defaults without jitter.
   */
  retry?: RetryPolicy;
}

export type { RetryPolicy };

export interface GatewayJobInput extends JobInput {
  args: JsonValue;
  /** Staged as `pending` until ACTIVATE (ojs-core §6.1). (Default: false.) */
  pending?: boolean;
  extras: GatewayExtras;
}

/** The failure a worker reported (ojs-core §8). */
export interface JobError {
  type: string;
  message: string;
  code?: string;
  retryable?: boolean;
  details?: JsonValue;
}

/** A job as the gateway reports it: the envelope view plus what the worker protocol records. */
export interface GatewayJob extends OjsJob {
  args: JsonValue;
  enqueued_at: string;
  started_at?: string;
  /**
   * When a job that never ran was discarded (its `expires_at` passed before a fetch could hand it
   * out): such a job has no `completed_at`. A job a worker's NACK discarded reports its
   * `completed_at` as `discarded_at` instead.
   */
  discarded_at?: string;
  result?: JsonValue;
  error?: JobError;
  /** Every failure a worker reported, oldest first (ojs-core §8.3's error history, error-history.ts). */
  errors?: JobErrorEntry[];
  /** The delay the job's last failure scheduled its retry after, in ms (the retry policy's, retry-policy.ts). */
  retry_delay_ms?: number;
  envelope: Record<string, JsonValue>;
}

/** One failure of the error history: the error as reported, the attempt it ended and when. */
export interface JobErrorEntry extends JobError {
  attempt: number;
  occurred_at: string;
}

/** A page of dead letters (`GET /ojs/v1/dead-letter`): the discarded jobs, and how many there are in all. */
export interface DeadLetterPage {
  jobs: GatewayJob[];
  total: number;
}

/**
 * The dead letter queue: the jobs a failure discarded (attempts exhausted, a non-retryable error,
 * an expired deadline), kept where each host keeps its failed jobs, so every gateway process over
 * the backend sees the same ones (docs/design/gateway.md, "Retries and dead letters").
 */
export interface DeadLetters {
  /** The discarded jobs, of `queue` when given, `offset` skipped, at most `limit`. */
  list(query: { queue?: string; limit: number; offset: number }): Promise<DeadLetterPage>;
  /** A discarded job back to `available` with `attempt` 0 (ojs-core §6.4's manual retry); `conflict` when it is not discarded. */
  retry(id: string): Promise<GatewayJob>;
  /** Deletes a discarded job as its host removes one: INFO no longer finds it. `conflict` when it is not discarded. */
  remove(id: string): Promise<void>;
}

export type GatewayEnqueueResult =
  /** A report-only policy's add (src/report-only.ts) is always created; `wouldBe` says what the policy would have done. */
  | { outcome: 'created'; job: GatewayJob; wouldBe?: WouldBe; existingJobId?: string }
  | { outcome: 'deduplicated'; job: GatewayJob }
  /** `replace`: as the backends' `EnqueueResult`, `also_replaced` naming further duplicates, oldest first. */
  | { outcome: 'replaced'; job: GatewayJob; replaced: GatewayJob; also_replaced?: GatewayJob[] }
  /** The `x_update` extension: the existing job, updated in place; `changed` names what differed. */
  | { outcome: 'updated'; job: GatewayJob; changed: UpdateField[] };

export interface OjsEvent {
  id: string;
  type: string;
  time: string;
  data: Record<string, JsonValue>;
}

export interface FetchRequest {
  queues: readonly string[];
  count: number;
  workerId: string | null;
  /** The reservation asked for; null: each job's own `visibility_timeout_ms`, else 30 s (job-reservation.ts). */
  visibilityTimeoutMs: number | null;
}

/** A worker's lifecycle state as the server wants it (ojs-worker-protocol §2): the heartbeat's `state`. */
export type WorkerState = 'running' | 'quiet' | 'terminate';

export interface StoreHealth {
  ok: boolean;
  type: string;
  latency_ms?: number;
  error?: string;
}

/**
 * Where an `Idempotency-Key` is kept (server/idempotent-push.ts): on the backend, so that every
 * gateway process over it shares the keys. One record per scope and key: the request's
 * fingerprint, the job ids its jobs are given, and either a claim (an owner and a lease) or the
 * answer given. Each operation is one atomic step on the backend.
 */
export interface IdempotencyRecords {
  /**
   * Claims the key for `owner`: a new record (`claimed`, with `ids`), or one whose claim lapsed
   * (`claimed`, `resumed`: the ids first given, whose jobs may exist). Otherwise: another
   * fingerprint (`mismatch`), a claim still leased (`in_progress`), or the answer stored (`done`).
   */
  claim(claim: IdempotencyClaim): Promise<IdempotencyClaimResult>;
  /** Stores the answer when `owner` still holds the claim (false otherwise); kept `retentionMs` from now. */
  finish(record: IdempotencyRecordKey, owner: string, answer: StoredAnswer, retentionMs: number): Promise<boolean>;
  /** Ends `owner`'s lease at once, the answer not stored: the next request with the key resumes the claim. */
  abandon(record: IdempotencyRecordKey, owner: string): Promise<void>;
}

export interface IdempotencyRecordKey {
  /** Whose key: the auth principal (a digest of the token) or the whole server. */
  scope: string;
  /** A digest of the key as sent: the key itself is never stored. */
  keyHash: string;
}

export interface IdempotencyClaim extends IdempotencyRecordKey {
  /** A digest of the request (method, route, canonical body). */
  fingerprint: string;
  /** A random id of this request's claim. */
  owner: string;
  /** The job ids the request's jobs get (stored with a new record). */
  ids: readonly string[];
  leaseMs: number;
  retentionMs: number;
}

export type IdempotencyClaimResult =
  | { outcome: 'claimed'; ids: string[]; resumed: boolean }
  | { outcome: 'mismatch' }
  | { outcome: 'in_progress'; retryAfterMs: number }
  | { outcome: 'done'; answer: StoredAnswer };

/** An answer as sent: status, JSON body text, `Location` when it had one. */
export interface StoredAnswer {
  status: number;
  body: string;
  location?: string;
}

/** A workflow's record and the version a compare-and-swap write must name. */
export interface VersionedWorkflow {
  record: WorkflowRecord;
  version: number;
}

/**
 * Where the workflow records are kept (workflow-record.ts): on the backend, so that every gateway
 * process over it advances the same records. Each write is a compare-and-swap on the version.
 */
export interface WorkflowRecords {
  /** Stores a new record (version 1) and the link from each of its job ids to it. */
  create(record: WorkflowRecord): Promise<void>;
  read(id: string): Promise<VersionedWorkflow | null>;
  /** The workflow job `jobId` belongs to, or null (most jobs: one lookup). */
  ofJob(jobId: string): Promise<VersionedWorkflow | null>;
  /** Writes `record` when its stored version is still `version`; false when another write came first. */
  write(record: WorkflowRecord, version: number): Promise<boolean>;
}

export interface GatewayStore {
  readonly backend: 'memory' | 'bullmq' | 'graphile-worker';
  readonly capabilities: UniqueJobsCapabilities;
  /** The `Idempotency-Key` records, on the backend. */
  readonly idempotency: IdempotencyRecords;
  /** The dead letter queue, on the backend. */
  readonly deadLetters: DeadLetters;
  /** The registered crons and their ticks, on the backend (cron-schedules.ts). */
  readonly cron: CronSchedules;
  /** The workflow records (chain, group, batch), on the backend. */
  readonly workflows: WorkflowRecords;
  /** PUSH with the unique-jobs check; `reject` throws `DuplicateJobError`, bad input `InvalidJobInputError`. */
  enqueue(job: GatewayJobInput): Promise<GatewayEnqueueResult>;
  /**
   * PUSH batch, all-or-nothing where the host allows it: every job is validated before any is
   * written; memory and Graphile Worker then write the batch as one atomic step, BullMQ cancels
   * what the batch had created when a `reject` duplicate is met part-way (docs/design/gateway.md).
   */
  enqueueBatch(jobs: GatewayJobInput[]): Promise<GatewayEnqueueResult[]>;
  getJob(id: string): Promise<GatewayJob | null>;
  cancel(id: string): Promise<GatewayJob>;
  activate(id: string): Promise<GatewayJob>;
  /**
   * Claims up to `count` due jobs, the queues in the order given; each is `active` and reserved for
   * the visibility timeout. A paused queue is skipped, and a rate-limited one gives no more than its
   * limit allows. A claimed job whose `expires_at` has passed is discarded instead (ojs-core
   * `expires_at`), never handed out.
   */
  fetch(request: FetchRequest): Promise<GatewayJob[]>;
  ack(id: string, result: JsonValue | undefined): Promise<GatewayJob>;
  /**
   * `retry: false` discards at once, and so does an error the job's policy lists as non-retryable
   * (retry-policy.ts); otherwise `retryable` while attempts remain, after the policy's delay.
   * Appends the error to the job's history.
   */
  nack(id: string, error: JobError, retry: boolean): Promise<GatewayJob>;
  /**
   * Extends an active job's reservation by `visibilityTimeoutMs` from now (null: the job's own
   * visibility timeout, else 30 s), never past its execution deadline (job-reservation.ts).
   */
  heartbeat(id: string, visibilityTimeoutMs: number | null): Promise<GatewayJob>;
  /**
   * NACK with `requeue: true`: the worker gives the job back (a graceful shutdown), and it is
   * `available` again at once, `error` recorded; its attempt counts, so the last one is discarded.
   */
  release(id: string, error: JobError): Promise<GatewayJob>;
  /**
   * The state an operator asked of worker `workerId` (worker-signal-routes.ts), kept on the backend
   * so every gateway process answers it; `running` when none was asked or it expired.
   */
  workerState(workerId: string): Promise<WorkerState>;
  /** Asks worker `workerId` to go quiet or terminate, for `retentionMs`; `terminate` is never taken back by `quiet`. */
  setWorkerState(workerId: string, state: 'quiet' | 'terminate', retentionMs: number): Promise<void>;
  /**
   * Pauses (`true`) or resumes a queue for FETCH (ojs-http-binding §11.3–11.4): a paused queue's
   * jobs are still accepted by PUSH and stay `available`, and no fetch hands one out. Idempotent.
   * BullMQ: the queue's own pause (its workers stop too); memory and Graphile Worker: the
   * gateway's (docs/design/gateway.md).
   */
  setPaused(queue: string, paused: boolean): Promise<void>;
  /** Whether `queue` is paused. */
  isPaused(queue: string): Promise<boolean>;
  /** Sets `queue`'s rate limit for FETCH (queue-rate-limit.ts), replacing any it had. */
  setRateLimit(queue: string, limit: RateLimit): Promise<void>;
  /** The backend's clock, in ms since the epoch: Redis's TIME, PostgreSQL's now(), this process's on memory. */
  now(): Promise<number>;
  /** How many jobs of `queue` are in each OJS state (states without jobs may be omitted). */
  queueStats(queue: string): Promise<Partial<Record<OjsJobState, number>>>;
  health(): Promise<StoreHealth>;
  /** Clears what this store owns (its prefix, its schemas, its memory): the `--test-reset` endpoint. */
  reset(): Promise<void>;
  close(): Promise<void>;
}
