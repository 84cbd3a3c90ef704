/**
 * `createGraphileWorkerBackend`: the core's `UniqueJobsBackend` over a Graphile Worker schema, so
 * the shared conformance suite (and the demo) run unchanged. Graphile users mostly want
 * `makeUniqueWorkerUtils`, `addJobWithClient` and `withUniqueHelpers`; this is the OJS-shaped
 * view of the same ledger.
 *
 * OJS -> Graphile: `type` is the task identifier, `args` the payload, `scheduled_at` run_at,
 * `max_attempts` max_attempts, OJS `priority` (higher first) is negated into Graphile's (smaller
 * first). OJS `queue` and `meta` live in the ledger only; Graphile's `queue_name` is set only
 * by `queueNameFor`, because a Graphile named queue runs its jobs one at a time.
 */
import { userInfo } from 'node:os';
import { InvalidTransitionError, JobNotFoundError, underPath } from '../../src/errors.js';
import type { JobInput, OjsJob } from '../../src/job.js';
import { TERMINAL_STATES, type OjsJobState } from '../../src/job-state.js';
import type { EnqueueResult, UniqueJobsBackend, UniqueJobsCapabilities } from '../../src/unique-jobs-backend.js';
import { DEFAULT_QUEUE } from '../../src/uniqueness-key.js';
import { enqueueAllOnClient, type EnqueueAllOptions } from './graphile-worker-add-job.js';
import { enqueueOnClient } from './graphile-worker-enqueue.js';
import { readJob } from './graphile-worker-job-view.js';
import { GRAPHILE_WORKER_EXTENSIONS, prepareGraphileEnqueue } from './graphile-worker-request.js';
import { schemaHandle, type SchemaHandle } from './graphile-worker-schema-handle.js';
import { backendClosedError, translatePgError } from './graphile-worker-errors.js';
import { observedEnqueue } from './graphile-worker-telemetry.js';
import {
  DEFAULT_CONNECTION_TIMEOUT_MS,
  makeOwnPool,
  withDefaultUser,
  type PgClientLike,
  type PgPoolClientLike,
  type PgPoolLike,
} from './graphile-worker-pg.js';
import { reclaimUniqueJobs, type ReclaimOptions, type ReclaimResult } from './graphile-worker-reclaim.js';
import { isKeyRef, keyRefLookup, type KeyLookup, type UniquenessKeyRef } from '../../src/key-lookup.js';
import { explainUniqueJob, findUniqueJob, releaseUniqueKey, requestLookup, requestPrepared } from './graphile-worker-lookups.js';
import type { UniqueExplanation } from '../../src/unique-explain.js';
import { checkUniqueJobsSchema } from './graphile-worker-schema.js';
import type { GraphileWorkerSql, SchemaNames } from './graphile-worker-sql.js';

export interface GraphileWorkerBackendOptions {
  /** A `pg.Pool` you own (not ended by `close()`). Give this or `connectionString`. */
  pgPool?: PgPoolLike;
  /** Creates a `pg.Pool` of `maxPoolSize` connections that `close()` ends. */
  connectionString?: string;
  /** Size of the pool created from `connectionString`. (Default: 10, as Graphile Worker.) */
  maxPoolSize?: number;
  /**
   * How long getting a connection from the pool created from `connectionString` may take before
   * the call fails with a `BackendError` (pg's own default, 0, waits without limit, e.g. for the
   * operating system's TCP timeout when the server is unreachable). A `pgPool` you give keeps
   * its own setting. (Default: 10000.)
   */
  connectionTimeoutMillis?: number;
  /** The adapter's own schema (ledger, functions, migrations). (Default: `ojs_unique`.) */
  uniqueSchema?: string;
  /** Graphile Worker's schema. (Default: `graphile_worker`.) */
  workerSchema?: string;
  /**
   * Run Graphile Worker's own migrations (with the adapter's preset) before the first operation,
   * as `makeWorkerUtils` does; when both schemas are already current that only reads. With false
   * nothing is ever created: both schemas must already be installed at this package's version
   * (`runUniqueJobsMigrations`, `ojs-unique migrate`), else the start-up fails with a
   * `UniqueSchemaVersionError` naming both versions. (Default: true.)
   */
  migrate?: boolean;
  /**
   * §5.2: let `replace` cancel a running job by fencing it (it finishes its attempt but is never
   * retried, and its outcome is not recorded). Off, `replace` meeting an active duplicate
   * rejects with state `active`, as on the memory and BullMQ backends. (Default: false.)
   */
  replaceActive?: boolean;
  /**
   * Send the enqueue's statements as named prepared statements, parsed once per connection; set
   * false behind a pooler that cannot carry them (PgBouncer in transaction mode before 1.21).
   * (Default: true, as Graphile Worker.)
   */
  preparedStatements?: boolean;
  /**
   * Count each duplicate add on the job it met (`duplicate_count`, `last_duplicate_at` on the job
   * view; docs/decisions.md, "Duplicate counts"): one more statement per duplicate. (Default: false.)
   */
  countDuplicates?: boolean;
  /** Graphile `queue_name` for an OJS queue: named queues serialise their jobs. (Default: always null.) */
  queueNameFor?: (queue: string) => string | null;
}

export interface GraphileWorkerBackend extends UniqueJobsBackend {
  /** The schema names in use. */
  readonly schemas: SchemaNames;
  /** Reclaims ledger records no policy can still need (retention); see docs/graphile-worker.md. */
  reclaim(options?: ReclaimOptions): Promise<ReclaimResult>;
  /** Graphile Worker's job id of OJS job `id` (for Graphile's own APIs), or null if unknown. */
  graphileJobId(id: string): Promise<string | null>;
  /** Resolves once both schemas are installed; every other method awaits it too. */
  ready(): Promise<void>;
  /**
   * Enqueues a batch all-or-nothing, in one transaction: every job is validated first (an issue's
   * path starts with the job's index, `[2].unique.period`), keys are locked in key order, and a
   * `reject` duplicate (or any failure) rolls the whole batch back and throws. No other session,
   * a worker included, sees any job of the batch before it commits. Results are in input order.
   * `beforeCommit` runs inside the transaction after the last job, on its client; what it writes
   * commits or rolls back with the batch.
   */
  enqueueMany(jobs: readonly JobInput[], options?: Pick<EnqueueAllOptions, 'beforeCommit'>): Promise<EnqueueResult[]>;
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
   * and pre-image, every record under the key (state, window end, counted or not) and the outcome.
   * @throws InvalidJobInputError for a job without `unique` or a bad job, as `enqueue` would.
   */
  explainUnique(job: JobInput): Promise<UniqueExplanation>;
}

export function createGraphileWorkerBackend(options: GraphileWorkerBackendOptions): GraphileWorkerBackend {
  return new GraphileWorkerUniqueJobsBackend(options);
}

class GraphileWorkerUniqueJobsBackend implements GraphileWorkerBackend {
  readonly capabilities: UniqueJobsCapabilities;
  readonly schemas: SchemaNames;
  readonly #sql: GraphileWorkerSql;
  readonly #pool: Promise<PgPoolLike>;
  readonly #ownsPool: boolean;
  /** The schema handle, with the same defaults as every other entry point (schemaHandle). */
  readonly #handle: SchemaHandle;
  readonly #queueNameFor: (queue: string) => string | null;
  readonly #migrate: boolean;
  #ready: Promise<void> | null = null;
  #closed = false;

  constructor(options: GraphileWorkerBackendOptions) {
    if (!options.pgPool === !options.connectionString)
      throw new TypeError('createGraphileWorkerBackend: give exactly one of pgPool or connectionString');
    this.#handle = schemaHandle({
      uniqueSchema: options.uniqueSchema,
      workerSchema: options.workerSchema,
      replaceActive: options.replaceActive,
      preparedStatements: options.preparedStatements,
      countDuplicates: options.countDuplicates,
    });
    this.#sql = this.#handle.sql;
    this.schemas = this.#sql.names;
    this.#ownsPool = !options.pgPool;
    this.#pool = options.pgPool
      ? Promise.resolve(options.pgPool)
      : makeOwnPool(
          withDefaultUser(options.connectionString!, () => userInfo().username),
          options.maxPoolSize ?? 10,
          options.connectionTimeoutMillis ?? DEFAULT_CONNECTION_TIMEOUT_MS,
        );
    this.#queueNameFor = options.queueNameFor ?? (() => null);
    this.#migrate = options.migrate ?? true;
    this.capabilities = {
      unique_jobs: {
        strength: 'strong',
        mechanism:
          'PostgreSQL transaction: per-key head row lock (INSERT … ON CONFLICT DO UPDATE), candidate read, then Graphile add_job (no job_key) and cancel, committed together',
        replace_active: this.#handle.replaceActive,
        extensions: GRAPHILE_WORKER_EXTENSIONS,
      },
    };
  }

  ready(): Promise<void> {
    if (this.#ready) return this.#ready;
    const ready: Promise<void> = this.#install().catch((error: unknown) => {
      // A failed start-up (database unreachable, a refused migration level) must not stick: keep
      // the rejection for the callers already waiting on it, but let the next call try again.
      if (this.#ready === ready) this.#ready = null;
      // Graphile's runMigrations and pool.connect throw plain errors; callers get BackendError.
      throw translatePgError(error, { operation: 'start-up (installing the schemas)', rolledBack: false });
    });
    this.#ready = ready;
    return ready;
  }

  async #install(): Promise<void> {
    const pool = await this.#pool;
    if (this.#migrate) {
      const { runMigrations } = await import('graphile-worker');
      const { makeUniqueJobsPreset } = await import('./graphile-worker-preset.js');
      // The preset's postmigrate hook installs the adapter's schema in the same pass.
      await runMigrations({
        pgPool: pool as never,
        schema: this.schemas.workerSchema,
        preset: { extends: [makeUniqueJobsPreset({ uniqueSchema: this.schemas.uniqueSchema })] },
      } as never);
      return;
    }
    const client = await this.#connect('start-up (checking the schemas)');
    try {
      await checkUniqueJobsSchema(client, this.#sql);
    } finally {
      client.release();
    }
  }

  #prepare(job: JobInput) {
    return prepareGraphileEnqueue(job, {
      queueName: job.queue === undefined || typeof job.queue === 'string' ? this.#queueNameFor(job.queue ?? DEFAULT_QUEUE) : null,
      // OJS: higher runs first. Graphile: numerically smaller runs first.
      priority: job.priority === undefined || job.priority === 0 ? null : -job.priority,
      flags: null,
    });
  }

  async enqueue(job: JobInput): Promise<EnqueueResult> {
    this.#assertOpen();
    return observedEnqueue(this.#prepare(job), async (request) => {
      await this.ready();
      const client = await this.#connect('enqueue');
      try {
        return await enqueueOnClient(client, this.#handle, request, { ownTransaction: true, reconnect: this.#reconnect });
      } finally {
        client.release();
      }
    });
  }

  async enqueueMany(jobs: readonly JobInput[], options: Pick<EnqueueAllOptions, 'beforeCommit'> = {}): Promise<EnqueueResult[]> {
    this.#assertOpen();
    const requests = jobs.map((job, index) => {
      try {
        return this.#prepare(job);
      } catch (error) {
        throw underPath(error, `[${index}].`);
      }
    });
    await this.ready();
    const client = await this.#connect('enqueueMany');
    try {
      return await enqueueAllOnClient(client, this.#handle, requests, {
        reconnect: this.#reconnect,
        operation: 'enqueueMany',
        beforeCommit: options.beforeCommit,
      });
    } finally {
      client.release();
    }
  }

  async getJob(id: string): Promise<OjsJob | null> {
    this.#assertOpen();
    await this.ready();
    const pool = await this.#pool;
    try {
      return await readJob(pool, this.#sql, id);
    } catch (error) {
      throw translatePgError(error, { operation: 'getJob', rolledBack: false });
    }
  }

  async graphileJobId(id: string): Promise<string | null> {
    this.#assertOpen();
    await this.ready();
    try {
      const { rows } = await (await this.#pool).query<{ job_id: string }>(this.#sql.text('read-graphile-id'), [id]);
      return rows[0]?.job_id ?? null;
    } catch (error) {
      throw translatePgError(error, { operation: 'graphileJobId', rolledBack: false });
    }
  }

  async findUniqueJob(target: JobInput | UniquenessKeyRef): Promise<OjsJob | null> {
    this.#assertOpen();
    const lookup = this.#lookupOf(target);
    await this.ready();
    return findUniqueJob(await this.#pool, this.#sql, lookup, this.#handle.countDuplicates);
  }

  async explainUnique(job: JobInput): Promise<UniqueExplanation> {
    this.#assertOpen();
    const prepared = requestPrepared(prepareGraphileEnqueue(job, { queueName: null, priority: null, flags: null }));
    await this.ready();
    return explainUniqueJob(await this.#pool, this.#sql, prepared, this.#handle.replaceActive);
  }

  async releaseUniqueKey(target: JobInput | UniquenessKeyRef): Promise<number> {
    this.#assertOpen();
    const lookup = this.#lookupOf(target);
    await this.ready();
    const client = await this.#connect('releaseUniqueKey');
    try {
      return await releaseUniqueKey(client, this.#sql, lookup);
    } finally {
      client.release();
    }
  }

  #lookupOf(target: JobInput | UniquenessKeyRef): KeyLookup {
    if (isKeyRef(target)) return keyRefLookup(target);
    return requestLookup(prepareGraphileEnqueue(target, { queueName: null, priority: null, flags: null }));
  }

  async cancel(id: string): Promise<OjsJob> {
    this.#assertOpen();
    await this.ready();
    const client = await this.#connect('cancel');
    try {
      try {
        await client.query('begin');
        const { rows } = await client.query<{ job_id: string; state: OjsJobState }>(this.#sql.text('lock-job'), [id]);
        const locked = rows[0];
        if (!locked) throw new JobNotFoundError(id);
        if (TERMINAL_STATES.includes(locked.state)) throw new InvalidTransitionError(id, locked.state, 'cancelled');
        // OJS CANCEL of a running job: fence it (the attempt runs on, is never retried and its
        // outcome is not recorded), as the memory backend refuses its later ack/nack.
        await client.query(this.#sql.text('cancel-jobs'), [[locked.job_id], null, true]);
        const job = (await readJob(client, this.#sql, id))!;
        await client.query('commit');
        return job;
      } catch (error) {
        await client.query('rollback').catch(() => undefined);
        throw translatePgError(error, { operation: 'cancel', rolledBack: true });
      }
    } finally {
      client.release();
    }
  }

  async reclaim(options?: ReclaimOptions): Promise<ReclaimResult> {
    this.#assertOpen();
    await this.ready();
    return reclaimUniqueJobs(await this.#pool, this.#sql, options);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // Let an install in flight finish with the pool before ending it.
    await this.#ready?.catch(() => undefined);
    if (this.#ownsPool) await (await this.#pool).end();
  }

  /** A fresh pooled connection for the lost-reply check (request tokens). */
  readonly #reconnect = async <T>(body: (client: PgClientLike) => Promise<T>): Promise<T> => {
    const client = await (await this.#pool).connect();
    try {
      return await body(client);
    } finally {
      client.release();
    }
  };

  /** A pooled client; a failure to get one (nothing was sent yet) is a BackendError like any other. */
  async #connect(operation: string): Promise<PgPoolClientLike> {
    try {
      return await (await this.#pool).connect();
    } catch (error) {
      throw translatePgError(error, { operation, rolledBack: true });
    }
  }

  #assertOpen(): void {
    if (this.#closed) throw backendClosedError();
  }
}
