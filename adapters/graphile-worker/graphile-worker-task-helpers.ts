/**
 * `withUniqueHelpers(taskList)`: the same tasks, whose `helpers.addJob` and `helpers.addJobs`
 * also accept an OJS `unique` policy, so a task can enqueue unique follow-up jobs.
 *
 * A task-list wrapper rather than a plugin hook: graphile-config has no hook around task
 * execution or `helpers`, and `loadTaskFromFiles` only sees file-loaded tasks.
 * For file-loaded tasks, wrap inside the file: `export default withUniqueHelpers({ t: task }).t`.
 */
import type { JobHelpers, PromiseOrDirect, Task } from 'graphile-worker';
import { schemaHandle, type UniqueEntryPointOptions } from './graphile-worker-schema-handle.js';
import type { SchemaHandle } from './graphile-worker-schema-handle.js';
import type { TaskIdentifier, TaskPayload } from './graphile-worker-task-spec.js';
import { uniqueAddFunctions, type UniqueAddJob, type UniqueAddJobs } from './graphile-worker-unique-add.js';

/**
 * Task helpers whose `addJob`/`addJobs` accept `unique` (see {@link withUniqueHelpers}). Still
 * Graphile's `JobHelpers`: a task written for those runs unchanged.
 */
export interface UniqueJobHelpers extends JobHelpers {
  addJob: UniqueAddJob;
  addJobs: UniqueAddJobs;
}

/** Graphile's `Task<TName>` whose helpers are {@link UniqueJobHelpers}. Any Graphile `Task` is one. */
export type UniqueTask<TName extends TaskIdentifier = string & {}> = (
  payload: TaskPayload<TName>,
  helpers: UniqueJobHelpers,
) => PromiseOrDirect<void | PromiseOrDirect<unknown>[]>;

/** Graphile's `TaskList` of {@link UniqueTask}s: a name from `GraphileWorker.Tasks` gets its payload type. */
export type UniqueTaskList = {
  [Name in TaskIdentifier]?: Name extends keyof GraphileWorker.Tasks ? UniqueTask<Name> : UniqueTask<any>;
};

/** The tasks {@link withUniqueHelpers} returns: Graphile `Task`s, under the same names. */
export type WithUniqueHelpers<T extends UniqueTaskList> = {
  [Name in keyof T]: Name extends keyof GraphileWorker.Tasks ? Task<Name> : Task;
};

/** Pass the same `workerSchema` (and `uniqueSchema`) the worker runs with; `policies` by task identifier apply to every `helpers.addJob`/`addJobs` of that identifier. */
export function withUniqueHelpers<T extends UniqueTaskList>(taskList: T, options: UniqueEntryPointOptions = {}): WithUniqueHelpers<T> {
  const handle = schemaHandle(options);
  const wrapped: Record<string, unknown> = {};
  for (const [identifier, task] of Object.entries(taskList)) {
    // A list entry that is not a function (an optional task left undefined) stays as it was, so
    // Graphile treats it as it would have.
    wrapped[identifier] =
      typeof task === 'function' ? (payload: unknown, helpers: JobHelpers) => task(payload, uniqueHelpers(helpers, handle)) : task;
  }
  return wrapped as WithUniqueHelpers<T>;
}

function uniqueHelpers(helpers: JobHelpers, handle: SchemaHandle): UniqueJobHelpers {
  return { ...helpers, ...uniqueAddFunctions(helpers, handle) };
}
