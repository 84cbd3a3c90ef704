/**
 * Graphile's `addJob`/`addJobs` pair (from worker utils or from task helpers) extended with OJS
 * `unique`: an entry with a policy goes through the adapter's transaction, anything else to
 * Graphile's own function unchanged. Shared by `makeUniqueWorkerUtils` and `withUniqueHelpers`.
 */
import type { AddJobFunction, AddJobsFunction, AddJobsJobSpec, Job, WithPgClient } from 'graphile-worker';
import type { EnqueueResult } from '../../src/unique-jobs-backend.js';
import {
  addJobsOnClient,
  type PlainAddJobsSpec,
  type UniqueAddJobsSpec,
  type UniqueAddJobsSpecWithPolicy,
} from './graphile-worker-add-job.js';
import { enqueueOnClient } from './graphile-worker-enqueue.js';
import type { Reconnect } from './graphile-worker-lost-reply.js';
import type { SchemaHandle } from './graphile-worker-schema-handle.js';
import { translatePgError } from './graphile-worker-errors.js';
import { observedEnqueue } from './graphile-worker-telemetry.js';
import { reportUniqueAdds } from './graphile-worker-unique-add-hook.js';
import { DEFAULT_QUEUE } from '../../src/uniqueness-key.js';
import type { PgClientLike } from './graphile-worker-pg.js';
import {
  hasUniquePolicy,
  taskSpecToEnqueue,
  withEntryPointPolicy,
  type PlainTaskSpec,
  type TaskIdentifier,
  type TaskPayload,
  type UniqueTaskSpec,
  type UniqueTaskSpecWithPolicy,
} from './graphile-worker-task-spec.js';

/**
 * Graphile's `addJob` that also takes `unique`. The payload is typed by `GraphileWorker.Tasks`, as
 * in Graphile; the result by the spec's type, as the value will be.
 */
export interface UniqueAddJob {
  /** With `unique`: resolves to the outcome; `reject` throws `DuplicateJobError`. */
  <TIdentifier extends TaskIdentifier = string>(
    identifier: TIdentifier,
    payload: TaskPayload<TIdentifier>,
    spec: UniqueTaskSpecWithPolicy,
  ): Promise<EnqueueResult>;
  /** Without `unique` (or `unique: null`): Graphile's own `addJob`, unchanged (your `jobKey` works as before). */
  <TIdentifier extends TaskIdentifier = string>(
    identifier: TIdentifier,
    payload: TaskPayload<TIdentifier>,
    spec?: PlainTaskSpec,
  ): Promise<Job>;
  /** A spec whose type may or may not carry a policy (a `UniqueTaskSpec` variable): either result. */
  <TIdentifier extends TaskIdentifier = string>(
    identifier: TIdentifier,
    payload: TaskPayload<TIdentifier>,
    spec?: UniqueTaskSpec,
  ): Promise<EnqueueResult | Job>;
}

/**
 * Graphile's `addJobs` that also takes `unique`. A batch with a policy anywhere resolves to one
 * outcome per entry, in input order (entries without `unique` are recorded in the ledger as plain
 * jobs); a batch without one is Graphile's own `addJobs`. The result type says which when the
 * types can tell: no entry with a policy, or the first, the last or every entry with one.
 */
export interface UniqueAddJobs {
  /** No `unique` anywhere: Graphile's own `addJobs`, unchanged. */
  <TIdentifier extends TaskIdentifier = string>(
    specs: readonly PlainAddJobsSpec<TIdentifier>[],
    jobKeyPreserveRunAt?: boolean,
  ): Promise<readonly Job[]>;
  /** One transaction, an outcome per entry; a `reject` duplicate rolls the whole batch back and throws. */
  <TIdentifier extends TaskIdentifier = string>(
    specs: readonly [UniqueAddJobsSpecWithPolicy<TIdentifier>, ...UniqueAddJobsSpec<TIdentifier>[]],
  ): Promise<EnqueueResult[]>;
  <TIdentifier extends TaskIdentifier = string>(
    specs: readonly [...UniqueAddJobsSpec<TIdentifier>[], UniqueAddJobsSpecWithPolicy<TIdentifier>],
  ): Promise<EnqueueResult[]>;
  <TIdentifier extends TaskIdentifier = string>(specs: readonly UniqueAddJobsSpecWithPolicy<TIdentifier>[]): Promise<EnqueueResult[]>;
  /** Entries whose types may or may not carry a policy: either result (`jobKeyPreserveRunAt` applies to Graphile's). */
  <TIdentifier extends TaskIdentifier = string>(
    specs: readonly UniqueAddJobsSpec<TIdentifier>[],
    jobKeyPreserveRunAt?: boolean,
  ): Promise<readonly Job[] | EnqueueResult[]>;
}

export interface GraphileAddFunctions {
  addJob: AddJobFunction;
  addJobs: AddJobsFunction;
  withPgClient: WithPgClient;
}

export function uniqueAddFunctions(graphile: GraphileAddFunctions, handle: SchemaHandle): { addJob: UniqueAddJob; addJobs: UniqueAddJobs } {
  // Graphile's withPgClient throws plain errors when it cannot get a connection; the body's own
  // errors are already typed and pass through the translator unchanged.
  const onClient = <T>(operation: string, body: (client: PgClientLike) => Promise<T>) =>
    graphile
      .withPgClient((client) => body(client as unknown as PgClientLike))
      .catch((error: unknown) => {
        throw translatePgError(error, { operation, rolledBack: false });
      });
  // A fresh connection for the lost-reply check (request tokens): Graphile's own client source.
  const reconnect: Reconnect = (body) => graphile.withPgClient((client) => body(client as unknown as PgClientLike));
  // async: a refused spec rejects the returned promise rather than throwing synchronously.
  const addJob = (async (identifier: string, payload: unknown, given?: UniqueTaskSpec) => {
    const spec = withEntryPointPolicy(handle.policies, identifier, given);
    // `unique: null` is no policy (a plain job), on every entry point.
    if (!hasUniquePolicy(spec)) return graphile.addJob(identifier, payload, withoutUnique(spec));
    const request = taskSpecToEnqueue(identifier, payload, spec!);
    const result = await observedEnqueue(request, (traced) =>
      onClient('addJob', (client) => enqueueOnClient(client, handle, traced, { ownTransaction: true, reconnect })),
    );
    reportUniqueAdds(handle.onUniqueAdd, [{ identifier, queue: request.job.queue ?? DEFAULT_QUEUE, result }]);
    return result;
  }) as UniqueAddJob;
  const addJobs = (async (given: readonly UniqueAddJobsSpec[], jobKeyPreserveRunAt?: boolean) => {
    const specs = given.map(
      (spec, index) => withEntryPointPolicy(handle.policies, spec.identifier, spec, `[${index}]`) as UniqueAddJobsSpec,
    );
    if (!specs.some(hasUniquePolicy)) {
      return graphile.addJobs(specs.map(withoutUnique) as AddJobsJobSpec[], jobKeyPreserveRunAt);
    }
    const results = await onClient('addJobs', (client) => addJobsOnClient(client, handle, specs, reconnect));
    reportUniqueAdds(
      handle.onUniqueAdd,
      results.flatMap((result, index) =>
        hasUniquePolicy(specs[index])
          ? [{ identifier: specs[index]!.identifier, queue: specs[index]!.queue ?? DEFAULT_QUEUE, result }]
          : [],
      ),
    );
    return results;
  }) as UniqueAddJobs;
  return { addJob, addJobs };
}

/** A spec for Graphile's own functions: an explicit `unique: null` left out (Graphile never reads it). */
function withoutUnique<T extends { unique?: unknown } | undefined>(spec: T): T {
  if (spec === undefined || !Object.prototype.hasOwnProperty.call(spec, 'unique')) return spec;
  const { unique: _unique, ...rest } = spec as { unique?: unknown };
  return rest as T;
}
