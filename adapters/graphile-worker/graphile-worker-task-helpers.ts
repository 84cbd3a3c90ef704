/**
 * `withUniqueHelpers(taskList)`: the same tasks, whose `helpers.addJob` and `helpers.addJobs`
 * also accept an OJS `unique` policy, so a task can enqueue unique follow-up jobs.
 *
 * A task-list wrapper rather than a plugin hook: graphile-config has no hook around task
 * execution or `helpers` (research §4), and `loadTaskFromFiles` only sees file-loaded tasks.
 * For file-loaded tasks, wrap inside the file: `export default withUniqueHelpers({ t: task }).t`.
 */
import type { JobHelpers, TaskList } from 'graphile-worker';
import { addJobsOnClient, enqueueSettings, type UniqueAddJobsSpec, type UniqueEnqueueOptions } from './graphile-worker-add-job.js';
import { enqueueOnClient } from './graphile-worker-enqueue.js';
import type { PgClientLike } from './graphile-worker-pg.js';
import { taskSpecToEnqueue, type UniqueTaskSpec } from './graphile-worker-task-spec.js';
import type { UniqueAddJob, UniqueAddJobs } from './graphile-worker-utils.js';

/** Task helpers whose `addJob`/`addJobs` accept `unique` (see {@link withUniqueHelpers}). */
export interface UniqueJobHelpers extends Omit<JobHelpers, 'addJob' | 'addJobs'> {
  addJob: UniqueAddJob;
  addJobs: UniqueAddJobs;
}

export type UniqueTask<P = unknown> = (payload: P, helpers: UniqueJobHelpers) => void | Promise<void | unknown[]>;

/** Pass the same `graphileSchema` the worker runs with. */
export function withUniqueHelpers(taskList: Record<string, UniqueTask>, options: UniqueEnqueueOptions = {}): TaskList {
  const settings = enqueueSettings(options);
  const wrapped: TaskList = {};
  for (const [identifier, task] of Object.entries(taskList)) {
    wrapped[identifier] = (payload, helpers) => task(payload, uniqueHelpers(helpers, settings));
  }
  return wrapped;
}

function uniqueHelpers(helpers: JobHelpers, settings: ReturnType<typeof enqueueSettings>): UniqueJobHelpers {
  const onClient = <T>(body: (client: PgClientLike) => Promise<T>) => helpers.withPgClient((client) => body(client as unknown as PgClientLike));
  const addJob = (async (identifier: string, payload?: unknown, spec?: UniqueTaskSpec) => {
    if (spec?.unique === undefined) return helpers.addJob(identifier, payload, spec);
    const request = taskSpecToEnqueue(identifier, payload, spec);
    return onClient((client) => enqueueOnClient(client, settings, request, true));
  }) as UniqueAddJob;
  const addJobs = (async (specs: readonly UniqueAddJobsSpec[], jobKeyPreserveRunAt?: boolean) => {
    if (!specs.some((spec) => spec.unique !== undefined)) return helpers.addJobs(specs as never, jobKeyPreserveRunAt);
    return onClient((client) => addJobsOnClient(client, settings, specs));
  }) as UniqueAddJobs;
  return { ...helpers, addJob, addJobs };
}
