/**
 * The worker protocol of the OJS gateway on Graphile Worker: an HTTP worker takes, renews,
 * completes and fails jobs with Graphile Worker's own lock (`locked_by` / `locked_at` on
 * `_private_jobs`), the way Graphile's worker does in its getJobs / completeJobs / failJobs
 * queries, so a Graphile runner and an HTTP worker never both hold a job. These statements
 * (server/sql/gateway-*.sql) read and write `_private_jobs`, `_private_job_queues` and
 * `_private_tasks`: Graphile internals, declared in the adapter's host module
 * (GATEWAY_GRAPHILE_RELIANCES, with its contract test), checked when the store starts
 * (graphile-worker-gateway-schema.ts); test/gateway/graphile-worker-job-fetcher.test.ts holds the
 * protocol to Graphile's own worker.
 *
 * The lock owner is one id per adapter schema (`ojs-gateway:<adapter schema>`), shared by every
 * gateway process over it, so that any of them can end, fail or renew a job another fetched (as
 * on BullMQ, where the lock token is in the job's gateway record). Graphile's worker ids are
 * `worker-<random>`, so the two never collide.
 *
 * The OJS visibility timeout of a job held so is a reservation in its gateway row
 * (`gateway_jobs`, sql/gateway-migration-0001-schema.sql), for the lock it reserved: `reserve` (fetch,
 * heartbeat) and `takeLapsed`, which any of the processes runs.
 */
import type { JsonValue, OjsJob } from '../src/job.js';
import type { OjsJobState } from '../src/job-state.js';
import { buildJobView } from '../src/job-view.js';
import type { PgClientLike } from '../adapters/graphile-worker/graphile-worker-pg.js';
import type { SchemaNames } from '../adapters/graphile-worker/graphile-worker-sql.js';
import { GatewaySql } from './graphile-worker-gateway-sql.js';

export interface GraphileClaimedJob {
  /** Graphile's job id. */
  jobId: string;
  /** The OJS id the adapter recorded, or null for a job added with Graphile's own `addJob`. */
  ojsId: string | null;
}

export interface GraphileJobFetcher {
  /** The lock owner written to `locked_by`. */
  readonly owner: string;
  /** Claims the next due job of OJS queue `queue`, or null. */
  claim(queue: string): Promise<GraphileClaimedJob | null>;
  /** Deletes a job this fetcher holds (completed); false when it does not hold it. */
  complete(jobId: string): Promise<boolean>;
  /** Fails a job this fetcher holds; `retryDelayMs` null keeps Graphile's own backoff. False when it does not hold it. */
  fail(jobId: string, message: string, options: { permanent: boolean; retryDelayMs: number | null }): Promise<boolean>;
  /** Renews the lock of a job this fetcher holds; false when it does not hold it. */
  touch(jobId: string): Promise<boolean>;
  /**
   * Reserves a job this fetcher holds (OJS id `id`, Graphile id `jobId`) for `visibilityTimeoutMs`
   * from now, or until `deadlineMs` (the database's clock) when that is sooner; false when it does not hold it.
   */
  reserve(id: string, jobId: string, visibilityTimeoutMs: number, deadlineMs?: number | null): Promise<boolean>;
  /** Takes up to `limit` lapsed reservations: the jobs still held under the lock each reserved, to fail back. */
  takeLapsed(limit: number): Promise<{ id: string; jobId: string }[]>;
  /** The OJS view of a job Graphile holds that the adapter did not record (added with `addJob`); its id is Graphile's. */
  readGraphileJob(jobId: string): Promise<(OjsJob & { locked_by: string | null; last_error: string | null }) | null>;
  /** The gateway's fields of a job (gateway_jobs, sql/gateway-migration-0001-schema.sql), `{}` when none. */
  readSide(id: string): Promise<Record<string, JsonValue>>;
  /**
   * Merges fields into the job's gateway row; a field set to null is removed. On `on` when given
   * (a transaction's client: the row commits with it), else on the fetcher's own client.
   */
  writeSide(id: string, fields: Record<string, JsonValue>, on?: PgClientLike): Promise<void>;
  /** Job counts of one OJS queue by OJS state. */
  queueStats(queue: string): Promise<Partial<Record<OjsJobState, number>>>;
  /** Pauses or resumes an OJS queue for `claim` (gateway_queues; Graphile's own workers do not read it). */
  setPaused(queue: string, paused: boolean): Promise<void>;
  isPaused(queue: string): Promise<boolean>;
  /** At most `max` jobs of the queue claimed per `windowMs` (a fixed window, counted by `claim`). */
  setRateLimit(queue: string, max: number, windowMs: number): Promise<void>;
  /** The database's clock (now()), in ms since the epoch. */
  now(): Promise<number>;
  /** Asks worker `workerId` to go quiet or terminate for `retentionMs` (gateway_workers; `terminate` stays). */
  setWorkerState(workerId: string, state: 'quiet' | 'terminate', retentionMs: number): Promise<void>;
  /** The state asked of worker `workerId`, or null when none (or it expired). */
  workerState(workerId: string): Promise<'quiet' | 'terminate' | null>;
  /** A page of the dead letters (Graphile's permanently failed rows) by OJS id, of `queue` or all (null), and how many there are. */
  deadLetters(queue: string | null, limit: number, offset: number): Promise<{ total: number; ids: string[] }>;
  /** Reschedules a dead letter now with attempts 0 (Graphile's reschedule_jobs); false when it is not one. */
  retryDeadLetter(jobId: string): Promise<boolean>;
  /** Deletes a dead letter's row and marks OJS id `id` removed in its gateway row; false when it is not one. */
  removeDeadLetter(jobId: string, id: string): Promise<boolean>;
}

export function createGraphileJobFetcher(client: PgClientLike, schemas: SchemaNames): GraphileJobFetcher {
  const sql = GatewaySql.for(schemas);
  const owner = `ojs-gateway:${schemas.uniqueSchema}`;
  const run = sql.runner(client);
  const isBigint = (id: string) => /^[1-9]\d{0,18}$/.test(id);
  return {
    owner,
    async claim(queue) {
      const rows = await run<{ job_id: string; ojs_id: string | null }>('gateway-fetch-job', [owner, queue], 'fetch');
      const row = rows[0];
      return row ? { jobId: row.job_id, ojsId: row.ojs_id } : null;
    },
    async complete(jobId) {
      return (await run('gateway-complete-job', [jobId, owner], 'ack')).length > 0;
    },
    async fail(jobId, message, options) {
      return (await run('gateway-fail-job', [jobId, owner, message, options.permanent, options.retryDelayMs], 'nack')).length > 0;
    },
    async touch(jobId) {
      return (await run('gateway-touch-lock', [jobId, owner], 'heartbeat')).length > 0;
    },
    async reserve(id, jobId, visibilityTimeoutMs, deadlineMs = null) {
      return (await run('gateway-reserve-job', [id, jobId, visibilityTimeoutMs, owner, deadlineMs], 'reserving the job')).length > 0;
    },
    async setWorkerState(workerId, state, retentionMs) {
      await run('gateway-set-worker-state', [workerId, state, retentionMs], 'signalling the worker');
    },
    async workerState(workerId) {
      const rows = await run<{ state: 'quiet' | 'terminate' }>('gateway-read-worker-state', [workerId], 'reading the worker state');
      return rows[0]?.state ?? null;
    },
    async takeLapsed(limit) {
      const rows = await run<{ id: string; job_id: string }>('gateway-lapsed-reservations', [owner, limit], 'reading lapsed reservations');
      return rows.map((row) => ({ id: row.id, jobId: row.job_id }));
    },
    async readSide(id) {
      const rows = await run<{ side: Record<string, JsonValue> }>('gateway-read-side', [id], 'getJob');
      return rows[0]?.side ?? {};
    },
    async writeSide(id, fields, on) {
      await run('gateway-write-side', [id, JSON.stringify(fields)], 'recording the job', on);
    },
    async setPaused(queue, paused) {
      await run('gateway-set-queue-paused', [queue, paused], paused ? 'pausing the queue' : 'resuming the queue');
    },
    async isPaused(queue) {
      return (await run<{ paused: boolean }>('gateway-read-queue', [queue], 'reading the queue'))[0]?.paused ?? false;
    },
    async setRateLimit(queue, max, windowMs) {
      await run('gateway-set-rate-limit', [queue, max, windowMs], 'setting the rate limit');
    },
    async now() {
      const rows = await run<{ now: string }>('gateway-now', [], 'reading the clock');
      return Number(rows[0]!.now);
    },
    async deadLetters(queue, limit, offset) {
      const rows = await run<{ total: string; ids: string[] }>('gateway-dead-letters', [queue, limit, offset], 'listing dead letters');
      return { total: Number(rows[0]!.total), ids: rows[0]!.ids };
    },
    async retryDeadLetter(jobId) {
      return (await run('gateway-retry-dead-letter', [jobId], 'retrying a dead letter')).length > 0;
    },
    async removeDeadLetter(jobId, id) {
      return (await run('gateway-remove-dead-letter', [jobId, id], 'deleting a dead letter')).length > 0;
    },
    async queueStats(queue) {
      const rows = await run<{ state: OjsJobState; count: string }>('gateway-queue-stats', [queue], 'queue stats');
      return Object.fromEntries(rows.map((row) => [row.state, Number(row.count)]));
    },
    async readGraphileJob(jobId) {
      if (!isBigint(jobId)) return null;
      const rows = await run<{
        job_id: string;
        type: string;
        queue: string;
        args: JsonValue;
        state: OjsJobState;
        attempt: number;
        max_attempts: number;
        priority: number;
        created_at: Date;
        scheduled_at: Date;
        locked_by: string | null;
        last_error: string | null;
      }>('gateway-read-graphile-job', [jobId], 'getJob');
      const row = rows[0];
      if (!row) return null;
      return {
        ...buildJobView({
          id: row.job_id,
          type: row.type,
          queue: row.queue,
          args: row.args,
          meta: {},
          state: row.state,
          attempt: row.attempt,
          max_attempts: row.max_attempts,
          // Graphile runs smaller first; OJS runs higher first.
          priority: -row.priority,
          created_at: row.created_at,
          scheduled_at: row.scheduled_at,
          unique: null,
          uniqueness_key: null,
        }),
        locked_by: row.locked_by,
        last_error: row.last_error,
      };
    },
  };
}
