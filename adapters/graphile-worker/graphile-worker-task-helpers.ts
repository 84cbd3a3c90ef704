/**
 * `withUniqueHelpers(taskList)`: the same tasks, whose `helpers.addJob` and `helpers.addJobs`
 * also accept an OJS `unique` policy, so a task can enqueue unique follow-up jobs.
 *
 * A task-list wrapper rather than a plugin hook: graphile-config has no hook around task
 * execution or `helpers`, and `loadTaskFromFiles` only sees file-loaded tasks.
 * For file-loaded tasks, wrap inside the file: `export default withUniqueHelpers({ t: task }).t`.
 */
import type { JobHelpers, TaskList } from 'graphile-worker';
import { enqueueSettings, type UniqueEnqueueOptions } from './graphile-worker-add-job.js';
import type { EnqueueSettings } from './graphile-worker-enqueue.js';
import { uniqueAddFunctions, type UniqueAddJob, type UniqueAddJobs } from './graphile-worker-unique-add.js';

/** Task helpers whose `addJob`/`addJobs` accept `unique` (see {@link withUniqueHelpers}). */
export interface UniqueJobHelpers extends Omit<JobHelpers, 'addJob' | 'addJobs'> {
  addJob: UniqueAddJob;
  addJobs: UniqueAddJobs;
}

export type UniqueTask<P = unknown> = (payload: P, helpers: UniqueJobHelpers) => void | Promise<void | unknown[]>;

/** Pass the same `workerSchema` (and `uniqueSchema`) the worker runs with. */
export function withUniqueHelpers(taskList: Record<string, UniqueTask>, options: UniqueEnqueueOptions = {}): TaskList {
  const settings = enqueueSettings(options);
  const wrapped: TaskList = {};
  for (const [identifier, task] of Object.entries(taskList)) {
    wrapped[identifier] = (payload, helpers) => task(payload, uniqueHelpers(helpers, settings));
  }
  return wrapped;
}

function uniqueHelpers(helpers: JobHelpers, settings: EnqueueSettings): UniqueJobHelpers {
  return { ...helpers, ...uniqueAddFunctions(helpers, settings) };
}
