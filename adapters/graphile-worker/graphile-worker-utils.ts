/**
 * `makeUniqueWorkerUtils`: Graphile's `makeWorkerUtils()` whose `addJob` and `addJobs` also
 * accept an OJS `unique` policy. Everything else is Graphile's own utils, untouched.
 *
 * ```ts
 * const utils = await makeUniqueWorkerUtils({ pgPool });
 * const result = await utils.addJob('send_email', { to }, { unique: { keys: ['type', 'args'], on_conflict: 'ignore' } });
 * result.outcome; // 'created' | 'deduplicated' | 'replaced' | 'updated'
 * ```
 */
import type { EntryPointPolicyOptions } from '../../src/registered-policies.js';
import { makeWorkerUtils, type WorkerUtils, type WorkerUtilsOptions } from 'graphile-worker';
import type { OjsJob } from '../../src/job.js';
import { schemaHandle, type UniqueEnqueueOptions, type UniqueEntryPointOptions } from './graphile-worker-schema-handle.js';
import { readJob } from './graphile-worker-job-view.js';
import { translatePgError } from './graphile-worker-errors.js';
import { DEFAULT_CONNECTION_TIMEOUT_MS, makeOwnPool, type PgClientLike } from './graphile-worker-pg.js';
import { makeUniqueJobsPreset } from './graphile-worker-preset.js';
import { reclaimUniqueJobs, type ReclaimOptions, type ReclaimResult } from './graphile-worker-reclaim.js';
import { isKeyRef, keyRefLookup, type KeyLookup, type UniquenessKeyRef } from '../../src/key-lookup.js';
import { explainUniqueJob, findUniqueJob, releaseUniqueKey, requestLookup, requestPrepared } from './graphile-worker-lookups.js';
import type { UniqueExplanation } from '../../src/unique-explain.js';
import {
  taskSpecToEnqueue,
  withEntryPointPolicy,
  type TaskIdentifier,
  type TaskPayload,
  type UniqueTaskSpecWithPolicy,
} from './graphile-worker-task-spec.js';
import { uniqueAddFunctions, type UniqueAddJob, type UniqueAddJobs } from './graphile-worker-unique-add.js';

/** Graphile's options (`schema` is Graphile's schema) plus the adapter's. */
export interface UniqueWorkerUtilsOptions
  extends
    WorkerUtilsOptions,
    Pick<UniqueEnqueueOptions, 'replaceActive' | 'preparedStatements' | 'countDuplicates'>,
    EntryPointPolicyOptions,
    Pick<UniqueEntryPointOptions, 'onUniqueAdd'> {
  /** The adapter's own schema. (Default: `ojs_unique`.) */
  uniqueSchema?: string;
  /**
   * How long getting a connection may take before the call fails with a `BackendError`, on the
   * pool made from `connectionString` (or `DATABASE_URL`): without it, an unreachable server
   * makes a call wait for the operating system's TCP timeout. Not applied to a `pgPool` you give:
   * set `connectionTimeoutMillis` on it yourself (pg's default, 0, waits without limit).
   * (Default: 10000.)
   */
  connectionTimeoutMillis?: number;
}

export interface UniqueWorkerUtils extends Omit<WorkerUtils, 'addJob' | 'addJobs'> {
  addJob: UniqueAddJob;
  addJobs: UniqueAddJobs;
  /** OJS INFO for a job enqueued with `unique` (by its OJS id: Graphile's id unless you chose one). */
  getUniqueJob(id: string): Promise<OjsJob | null>;
  /** Ledger retention; see `makeReclaimTask` for the cron form. */
  reclaim(options?: ReclaimOptions): Promise<ReclaimResult>;
  findUniqueJob: UniqueKeyLookup<OjsJob | null>;
  releaseUniqueKey: UniqueKeyLookup<number>;
  /**
   * What `addJob(identifier, payload, spec)` would do now, and why (src/unique-explain.ts),
   * writing nothing: the key and pre-image, every record under it, and the outcome.
   */
  explainUnique<TIdentifier extends TaskIdentifier = string>(
    identifier: TIdentifier,
    payload: TaskPayload<TIdentifier>,
    spec: UniqueTaskSpecWithPolicy,
  ): Promise<UniqueExplanation>;
}

/**
 * A key lookup on the utils, naming the key as `addJob` would (identifier, payload and a spec with
 * `unique`), or by `{ uniqueness_key }` from a job view.
 *  - `findUniqueJob`: the job holding the key now (the one such an `addJob` would meet as its
 *    duplicate; by key alone, the oldest unfinished job under it), or null.
 *  - `releaseUniqueKey`: the next add of the key inserts, whatever holds it now; the jobs holding
 *    it stay as they are, no longer counted. Resolves to how many jobs stopped holding it.
 */
export interface UniqueKeyLookup<R> {
  (key: UniquenessKeyRef): Promise<R>;
  <TIdentifier extends TaskIdentifier = string>(
    identifier: TIdentifier,
    payload: TaskPayload<TIdentifier>,
    spec: UniqueTaskSpecWithPolicy,
  ): Promise<R>;
}

export async function makeUniqueWorkerUtils(options: UniqueWorkerUtilsOptions): Promise<UniqueWorkerUtils> {
  const {
    uniqueSchema,
    replaceActive,
    preparedStatements,
    countDuplicates,
    connectionTimeoutMillis = DEFAULT_CONNECTION_TIMEOUT_MS,
    policies,
    reportOnly,
    onUniqueAdd,
    ...workerOptions
  } = options;
  // Before Graphile connects: a schema name the adapter refuses is reported under these options'
  // own names, with nothing done.
  const handle = schemaHandle(
    {
      uniqueSchema,
      replaceActive,
      countDuplicates,
      policies,
      reportOnly,
      onUniqueAdd,
      // Off when Graphile is told not to use them (`noPreparedStatements`, or the preset's
      // `worker.preparedStatements`, in an `extends` preset too): whatever made the user turn
      // them off for Graphile applies to the adapter's statements as well.
      preparedStatements:
        preparedStatements ??
        (workerOptions.noPreparedStatements === true ? false : presetWorkerSetting(workerOptions.preset, 'preparedStatements')),
      workerSchema: workerOptions.schema ?? presetWorkerSetting(workerOptions.preset, 'schema'),
    },
    { uniqueSchema: 'uniqueSchema', workerSchema: workerOptions.schema !== undefined ? 'schema' : 'preset.worker.schema' },
  );
  // The pool Graphile would create from a connection string, made here with a connect timeout,
  // so that a call during an outage settles (see connectionTimeoutMillis).
  const connectionString = workerOptions.pgPool
    ? undefined
    : (workerOptions.connectionString ?? presetWorkerSetting(workerOptions.preset, 'connectionString') ?? process.env.DATABASE_URL);
  const ownPool = connectionString
    ? await makeOwnPool(
        connectionString,
        workerOptions.maxPoolSize ?? presetWorkerSetting(workerOptions.preset, 'maxPoolSize') ?? 10,
        connectionTimeoutMillis,
      )
    : null;
  // Graphile migrates on creation; the preset's postmigrate hook installs the adapter's schema.
  let utils: WorkerUtils;
  try {
    utils = await makeWorkerUtils({
      ...workerOptions,
      ...(ownPool ? { pgPool: ownPool as never, connectionString: undefined } : {}),
      preset: { extends: [...(workerOptions.preset ? [workerOptions.preset] : []), makeUniqueJobsPreset({ uniqueSchema })] },
    });
  } catch (error) {
    await ownPool?.end().catch(() => undefined);
    // A server that cannot be reached (or refuses the migration) is a typed error; Graphile's
    // migrations run one transaction each, so a failure leaves no half-applied one.
    throw translatePgError(error, { operation: 'makeUniqueWorkerUtils (connecting and migrating)', rolledBack: true });
  }
  // Every failure, a connection Graphile could not get included, surfaces as a typed error.
  const onClient = <T>(operation: string, body: (client: PgClientLike) => Promise<T>) =>
    utils
      .withPgClient((client) => body(client as unknown as PgClientLike))
      .catch((error: unknown) => {
        throw translatePgError(error, { operation, rolledBack: false });
      });
  const { addJob, addJobs } = uniqueAddFunctions(utils, handle);
  // async: a refused spec rejects the returned promise rather than throwing synchronously.
  const lookupOf = async (target: UniquenessKeyRef | string, payload?: unknown, spec?: UniqueTaskSpecWithPolicy): Promise<KeyLookup> =>
    isKeyRef(target)
      ? keyRefLookup(target)
      : requestLookup(taskSpecToEnqueue(target as string, payload, withEntryPointPolicy(handle.policies, target as string, spec ?? {})));

  return {
    ...utils,
    release: async () => {
      await utils.release();
      await ownPool?.end();
    },
    addJob,
    addJobs,
    getUniqueJob: (id) => onClient('getUniqueJob', (client) => readJob(client, handle.sql, id)),
    reclaim: (reclaimOptions) => onClient('reclaim', (client) => reclaimUniqueJobs(client, handle.sql, reclaimOptions)),
    findUniqueJob: (async (target: UniquenessKeyRef | string, payload?: unknown, spec?: UniqueTaskSpecWithPolicy) => {
      const lookup = await lookupOf(target, payload, spec);
      return onClient('findUniqueJob', (client) => findUniqueJob(client, handle.sql, lookup, handle.countDuplicates));
    }) as UniqueKeyLookup<OjsJob | null>,
    explainUnique: async (identifier, payload, spec) => {
      const prepared = requestPrepared(
        taskSpecToEnqueue(identifier as string, payload, withEntryPointPolicy(handle.policies, identifier as string, spec)),
      );
      return onClient('explainUnique', (client) => explainUniqueJob(client, handle.sql, prepared, handle.replaceActive));
    },
    releaseUniqueKey: (async (target: UniquenessKeyRef | string, payload?: unknown, spec?: UniqueTaskSpecWithPolicy) => {
      const lookup = await lookupOf(target, payload, spec);
      return onClient('releaseUniqueKey', (client) => releaseUniqueKey(client, handle.sql, lookup));
    }) as UniqueKeyLookup<number>,
  };
}

/**
 * A `worker` setting as graphile-config resolves it: the preset's own value, else the last of its
 * `extends` presets that sets it (they apply in order, the preset itself last). Only what the
 * adapter needs before Graphile has resolved the preset itself (the schema name, whether to
 * prepare statements); Graphile's utils do not expose their resolved preset.
 */
export function presetWorkerSetting<K extends 'schema' | 'preparedStatements' | 'connectionString' | 'maxPoolSize'>(
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
