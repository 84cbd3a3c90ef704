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
import { makeWorkerUtils, type WorkerUtils, type WorkerUtilsOptions } from 'graphile-worker';
import type { OjsJob } from '../../src/job.js';
import { enqueueSettings, type UniqueEnqueueOptions } from './graphile-worker-add-job.js';
import { readJob } from './graphile-worker-enqueue.js';
import { translatePgError } from './graphile-worker-errors.js';
import type { PgClientLike } from './graphile-worker-pg.js';
import { makeUniqueJobsPreset } from './graphile-worker-preset.js';
import { reclaimUniqueJobs, type ReclaimOptions, type ReclaimResult } from './graphile-worker-reclaim.js';
import { uniqueAddFunctions, type UniqueAddJob, type UniqueAddJobs } from './graphile-worker-unique-add.js';

/** Graphile's options (`schema` is Graphile's schema) plus the adapter's. */
export interface UniqueWorkerUtilsOptions extends WorkerUtilsOptions, Pick<UniqueEnqueueOptions, 'replaceActive' | 'preparedStatements'> {
  /** The adapter's own schema. (Default: `ojs_unique`.) */
  uniqueSchema?: string;
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
  const { uniqueSchema, replaceActive, preparedStatements, ...workerOptions } = options;
  // Before Graphile connects: a schema name the adapter refuses is reported under these options'
  // own names, with nothing done.
  const settings = enqueueSettings(
    {
      schema: uniqueSchema,
      replaceActive,
      // Off when Graphile is told not to use them (`noPreparedStatements`, or the preset's
      // `worker.preparedStatements`, in an `extends` preset too): whatever made the user turn
      // them off for Graphile applies to the adapter's statements as well.
      preparedStatements:
        preparedStatements ?? (workerOptions.noPreparedStatements === true ? false : presetWorkerSetting(workerOptions.preset, 'preparedStatements')),
      graphileSchema: workerOptions.schema ?? presetWorkerSetting(workerOptions.preset, 'schema'),
    },
    { uniqueSchema: 'uniqueSchema', graphileSchema: 'schema' },
  );
  // Graphile migrates on creation; the preset's postmigrate hook installs the adapter's schema.
  const utils = await makeWorkerUtils({
    ...workerOptions,
    preset: { extends: [...(workerOptions.preset ? [workerOptions.preset] : []), makeUniqueJobsPreset({ schema: uniqueSchema })] },
  });
  // Every failure, a connection Graphile could not get included, surfaces as a typed error.
  const onClient = <T>(operation: string, body: (client: PgClientLike) => Promise<T>) =>
    utils.withPgClient((client) => body(client as unknown as PgClientLike)).catch((error: unknown) => {
      throw translatePgError(error, { operation, rolledBack: false });
    });
  const { addJob, addJobs } = uniqueAddFunctions(utils, settings);

  return {
    ...utils,
    addJob,
    addJobs,
    getUniqueJob: (id) => onClient('getUniqueJob', (client) => readJob(client, settings.sql, id)),
    reclaim: (reclaimOptions) => onClient('reclaim', (client) => reclaimUniqueJobs(client, settings.sql, reclaimOptions)),
  };
}

/**
 * A `worker` setting as graphile-config resolves it: the preset's own value, else the last of its
 * `extends` presets that sets it (they apply in order, the preset itself last). Only what the
 * adapter needs before Graphile has resolved the preset itself (the schema name, whether to
 * prepare statements); Graphile's utils do not expose their resolved preset.
 */
export function presetWorkerSetting<K extends 'schema' | 'preparedStatements'>(
  preset: GraphileConfig.Preset | undefined,
  key: K,
): GraphileConfig.WorkerOptions[K] | undefined {
  if (!preset) return undefined;
  const own = preset.worker?.[key];
  if (own !== undefined) return own;
  for (const parent of [...(preset.extends ?? [])].reverse()) {
    const inherited = presetWorkerSetting(parent, key);
    if (inherited !== undefined) return inherited;
  }
  return undefined;
}
