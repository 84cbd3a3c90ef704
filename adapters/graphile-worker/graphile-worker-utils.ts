/**
 * `makeUniqueWorkerUtils`: Graphile's `makeWorkerUtils()` whose `addJob` and `addJobs` also
 * accept an OJS `unique` policy. Everything else is Graphile's own utils, untouched.
 *
 * ```ts
 * const utils = await makeUniqueWorkerUtils({ pgPool });
 * const result = await utils.addJob('send_email', { to }, { unique: { keys: ['type', 'args'], on_conflict: 'ignore' } });
 * result.outcome; // 'created' | 'deduplicated' | 'replaced'
 * ```
 */
import { makeWorkerUtils, type AddJobsJobSpec, type Job, type TaskSpec, type WorkerUtils, type WorkerUtilsOptions } from 'graphile-worker';
import type { OjsJob } from '../../src/job.js';
import type { EnqueueResult } from '../../src/unique-jobs-backend.js';
import {
  addJobsOnClient,
  enqueueSettings,
  type UniqueAddJobsSpec,
  type UniqueEnqueueOptions,
  type UniqueTaskSpecWithPolicy,
} from './graphile-worker-add-job.js';
import { enqueueOnClient, readJob } from './graphile-worker-enqueue.js';
import type { PgClientLike } from './graphile-worker-pg.js';
import { makeUniqueJobsPreset } from './graphile-worker-preset.js';
import { reclaimUniqueJobs, type ReclaimOptions, type ReclaimResult } from './graphile-worker-reclaim.js';
import { taskSpecToEnqueue, type UniqueTaskSpec } from './graphile-worker-task-spec.js';

/** Graphile's options (`schema` is Graphile's schema) plus the adapter's. */
export interface UniqueWorkerUtilsOptions extends WorkerUtilsOptions, Pick<UniqueEnqueueOptions, 'replaceActive'> {
  /** The adapter's own schema. (Default: `ojs_unique`.) */
  uniqueSchema?: string;
}

export interface UniqueAddJob {
  /** With `unique`: resolves to the outcome; `reject` throws `DuplicateJobError`. */
  (identifier: string, payload: unknown, spec: UniqueTaskSpecWithPolicy): Promise<EnqueueResult>;
  /** Without `unique`: Graphile's own `addJob`, unchanged (your `jobKey` works as before). */
  (identifier: string, payload?: unknown, spec?: TaskSpec): Promise<Job>;
}

export interface UniqueAddJobs {
  /** No `unique` anywhere: Graphile's own `addJobs`, unchanged. */
  (specs: AddJobsJobSpec[], jobKeyPreserveRunAt?: boolean): Promise<readonly Job[]>;
  /**
   * A batch with at least one `unique` entry: one transaction, an outcome per entry, in input
   * order (entries without `unique` are recorded in the ledger as plain jobs).
   */
  (specs: readonly UniqueAddJobsSpec[]): Promise<EnqueueResult[]>;
}

export interface UniqueWorkerUtils extends Omit<WorkerUtils, 'addJob' | 'addJobs'> {
  addJob: UniqueAddJob;
  addJobs: UniqueAddJobs;
  /** OJS INFO for a job enqueued with `unique` (by its OJS id: Graphile's id unless you chose one). */
  getUniqueJob(id: string): Promise<OjsJob | null>;
  /** Ledger retention; see `makeReclaimTask` for the cron form. */
  reclaim(options?: ReclaimOptions): Promise<ReclaimResult>;
}

export async function makeUniqueWorkerUtils(options: UniqueWorkerUtilsOptions): Promise<UniqueWorkerUtils> {
  const { uniqueSchema, replaceActive, ...workerOptions } = options;
  // Graphile migrates on creation; the preset's postmigrate hook installs the adapter's schema.
  const utils = await makeWorkerUtils({
    ...workerOptions,
    preset: { extends: [...(workerOptions.preset ? [workerOptions.preset] : []), makeUniqueJobsPreset({ schema: uniqueSchema })] },
  });
  const settings = enqueueSettings({
    schema: uniqueSchema,
    replaceActive,
    graphileSchema: workerOptions.schema ?? workerOptions.preset?.worker?.schema,
  });
  const onClient = <T>(body: (client: PgClientLike) => Promise<T>) => utils.withPgClient((client) => body(client as unknown as PgClientLike));

  const addJob = (async (identifier: string, payload?: unknown, spec?: UniqueTaskSpec) => {
    if (spec?.unique === undefined) return utils.addJob(identifier, payload, spec);
    const request = taskSpecToEnqueue(identifier, payload, spec);
    return onClient((client) => enqueueOnClient(client, settings, request, true));
  }) as UniqueAddJob;

  const addJobs = (async (specs: readonly UniqueAddJobsSpec[], jobKeyPreserveRunAt?: boolean) => {
    if (!specs.some((spec) => spec.unique !== undefined)) return utils.addJobs(specs as AddJobsJobSpec[], jobKeyPreserveRunAt);
    return onClient((client) => addJobsOnClient(client, settings, specs));
  }) as UniqueAddJobs;

  return {
    ...utils,
    addJob,
    addJobs,
    getUniqueJob: (id) => onClient((client) => readJob(client, settings.sql, id)),
    reclaim: (reclaimOptions) => onClient((client) => reclaimUniqueJobs(client, settings.sql, reclaimOptions)),
  };
}
