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
import type { RateLimit } from './queue-rate-limit.js';
import type { CronSchedules } from './cron-schedules.js';

/** Envelope fields the gateway keeps beside a job: what OJS reports but the host does not store. */
export interface GatewayExtras {
  /** Unknown top-level envelope fields (`x_…`) and OJS options the host has no field for (`timeout_ms`, `tags`, `retry` …). */
  envelope?: Record<string, JsonValue>;
  /**
   * Retry policy read from `options.retry`, only when it gives an interval or a coefficient.
   * Absent, the host's backoff applies: Graphile Worker's own schedule; on memory OJS's defaults.
   * The BullMQ store never uses it: BullMQ's attempts and the backend's backoff decide.
   */
  retry?: RetryPolicy;
}

export interface RetryPolicy {
  initialIntervalMs: number;
  backoffCoefficient: number;
  maxIntervalMs: number;
}

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
  envelope: Record<string, JsonValue>;
}

export type GatewayEnqueueResult =
  | { outcome: 'created'; job: GatewayJob }
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
  visibilityTimeoutMs: number;
  /**
   * The request named no visibility timeout (`visibilityTimeoutMs` is the default): a job's own
   * `options.visibility_timeout_ms` then reserves it instead (job-visibility.ts).
   */
  visibilityFromJob?: boolean;
}

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

export interface GatewayStore {
  readonly backend: 'memory' | 'bullmq' | 'graphile-worker';
  readonly capabilities: UniqueJobsCapabilities;
  /** The `Idempotency-Key` records, on the backend. */
  readonly idempotency: IdempotencyRecords;
  /** The registered crons and their ticks, on the backend (cron-schedules.ts). */
  readonly cron: CronSchedules;
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
  /** `retry: false` discards at once; otherwise `retryable` while attempts remain. */
  nack(id: string, error: JobError, retry: boolean): Promise<GatewayJob>;
  /** Extends an active job's reservation by `visibilityTimeoutMs` from now. */
  heartbeat(id: string, visibilityTimeoutMs: number): Promise<GatewayJob>;
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
