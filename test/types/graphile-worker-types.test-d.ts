/**
 * Type tests of `ojs-unique/graphile-worker`: payload types from `GraphileWorker.Tasks`, result
 * types that match the value at run time, Graphile's own `Task` in `withUniqueHelpers`, and one
 * name per schema option. Compiled by `npm run typecheck`, never run (mocha only picks up
 * `*.test.ts`).
 *
 * Each `@ts-expect-error` is a test: it fails compilation if the line below it compiles. Each
 * `exactly<…>()(value)` fails compilation unless `value`'s type is exactly the one named.
 *
 * The `GraphileWorker.Tasks` augmentation below is global: it holds for the whole typecheck
 * program, so its task names carry an `ojs_type_test_` prefix no other code uses.
 */
import type pg from 'pg';
import type { AddJobsJobSpec, Job, JobHelpers, ParsedCronItem, Task, TaskList, TaskSpec } from 'graphile-worker';
import {
  addJobWithClient,
  createGraphileWorkerBackend,
  makeReclaimTask,
  makeUniqueJobsPreset,
  makeUniqueWorkerUtils,
  makeUniqueCronTask,
  runUniqueJobsMigrations,
  UniqueSchemaVersionError,
  uniqueCronItems,
  withUniqueHelpers,
  type PgPoolLike,
  type PlainAddJobsSpec,
  type PlainTaskSpec,
  type TransactionClientLike,
  type UniqueAddJobsSpec,
  type UniqueAddJobsSpecWithPolicy,
  type UniqueJobHelpers,
  type UniqueTask,
  type UniqueTaskSpec,
  type UniqueTaskSpecWithPolicy,
  type UniqueWorkerUtils,
} from '../../adapters/graphile-worker/index.js';
import { UNIQUE_STATE_GROUPS, type EnqueueResult, type OjsJob, type UniquePolicyInput } from '../../src/index.js';

declare global {
  namespace GraphileWorker {
    interface Tasks {
      ojs_type_test_email: { to: string };
      ojs_type_test_report: { month: number };
    }
  }
}

/** True when A and B are the same type (not merely assignable either way). */
type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
/**
 * `exactly<T>()(value)` compiles only when `value` is of type exactly `T` (`any` included: a
 * mismatch asks for a second argument, of the expected type, which the tests never give).
 */
const exactly =
  <Expected>() =>
  <Actual>(value: Actual, ...typeIsNot: Equals<Actual, Expected> extends true ? [] : [expected: Expected]): void =>
    void [value, typeIsNot];

const readmePolicy = { keys: ['type', 'args'], args_keys: ['to'], period: 'PT1H', on_conflict: 'ignore' } as const;
const allStates = { keys: ['type'], states: UNIQUE_STATE_GROUPS.all } as const;
const checked = { keys: ['type', 'meta'], meta_keys: ['tenant'], period: 3600, on_conflict: 'replace' } satisfies UniquePolicyInput;

declare const uniqueSpec: UniqueTaskSpec;
declare const withPolicy: UniqueTaskSpecWithPolicy;
declare const plainSpec: PlainTaskSpec;
declare const graphileSpec: TaskSpec;

// Not called: these functions only have to compile.

/** utils.addJob: the payload is typed by `GraphileWorker.Tasks`; the result by the spec. */
export async function utilsAddJob(utils: UniqueWorkerUtils): Promise<void> {
  exactly<Job>()(await utils.addJob('ojs_type_test_email', { to: 'a@example.com' }));
  exactly<EnqueueResult>()(await utils.addJob('ojs_type_test_email', { to: 'a@example.com' }, { unique: readmePolicy }));
  exactly<Job>()(await utils.addJob('ojs_type_test_report', { month: 7 }, { priority: 1 }));
  // @ts-expect-error the payload of a declared task is checked, without a policy
  await utils.addJob('ojs_type_test_email', { to: 7 });
  // @ts-expect-error the payload of a declared task is checked, with a policy
  await utils.addJob('ojs_type_test_email', { to: 7 }, { unique: {} });
  // @ts-expect-error a field of the payload is missing
  await utils.addJob('ojs_type_test_report', {}, { unique: {} });
  // @ts-expect-error the payload is required, as in Graphile
  await utils.addJob('ojs_type_test_email');
  // An undeclared task takes any payload, as in Graphile.
  exactly<Job>()(await utils.addJob('email.send', 42));
  exactly<EnqueueResult>()(await utils.addJob('email.send', null, { unique: {} }));

  // The result is what the value will be (no spec, no `unique` or `unique: null`: Graphile's Job).
  exactly<Job>()(await utils.addJob('t', {}, {}));
  exactly<Job>()(await utils.addJob('t', {}, { unique: null }));
  exactly<Job>()(await utils.addJob('t', {}, { unique: undefined }));
  exactly<Job>()(await utils.addJob('t', {}, { jobKey: 'k', jobKeyMode: 'preserve_run_at' }));
  exactly<Job>()(await utils.addJob('t', {}, plainSpec));
  exactly<Job>()(await utils.addJob('t', {}, graphileSpec));
  exactly<EnqueueResult>()(await utils.addJob('t', {}, { unique: {} }));
  exactly<EnqueueResult>()(await utils.addJob('t', {}, withPolicy));
  // A spec whose type may carry a policy: either, never a lie.
  exactly<EnqueueResult | Job>()(await utils.addJob('t', {}, uniqueSpec));
  exactly<EnqueueResult | Job>()(await utils.addJob('t', {}, { queue: 'q' }));
  // @ts-expect-error a spec that may carry a policy is not a Job for sure
  const lie: Job = await utils.addJob('t', {}, uniqueSpec);
  void lie;

  // Policies written `as const`, with UNIQUE_STATE_GROUPS, or checked with `satisfies`.
  await utils.addJob('t', {}, { unique: allStates });
  await utils.addJob('t', {}, { unique: { states: UNIQUE_STATE_GROUPS.all } });
  await utils.addJob('t', {}, { unique: { keys: ['type', 'meta'], meta_keys: ['tenant'] }, meta: { tenant: 't' } });
  await utils.addJob('t', {}, { unique: checked, meta: { tenant: 't' } });
  // @ts-expect-error misspelt strategy
  await utils.addJob('t', {}, { unique: { on_conflict: 'ignroe' } });
  // @ts-expect-error misspelt field next to a valid one
  await utils.addJob('t', {}, { unique: { keys: ['type'], periood: 5 } });
  // @ts-expect-error unknown state
  await utils.addJob('t', {}, { unique: { states: ['done'] } });
  // @ts-expect-error misspelt OJS field of the spec
  await utils.addJob('t', {}, { unique: {}, metta: {} });
}

/** utils.addJobs: Graphile's entries, or OJS ones; the result type says which when it can. */
export async function utilsAddJobs(utils: UniqueWorkerUtils): Promise<void> {
  exactly<readonly Job[]>()(await utils.addJobs([{ identifier: 'ojs_type_test_email', payload: { to: 'a' } }]));
  exactly<readonly Job[]>()(await utils.addJobs([{ identifier: 't', payload: {}, unique: null }], true));
  exactly<readonly Job[]>()(await utils.addJobs([]));
  exactly<EnqueueResult[]>()(await utils.addJobs([{ identifier: 'ojs_type_test_email', payload: { to: 'a' }, unique: readmePolicy }]));
  // The first entry, the last or every entry has a policy: outcomes for the whole batch.
  exactly<EnqueueResult[]>()(
    await utils.addJobs([
      { identifier: 't', payload: {}, unique: {} },
      { identifier: 't', payload: {} },
    ]),
  );
  exactly<EnqueueResult[]>()(
    await utils.addJobs([
      { identifier: 't', payload: {} },
      { identifier: 't', payload: {}, unique: allStates },
    ]),
  );
  // Only a middle entry: the types cannot tell, so either.
  exactly<readonly Job[] | EnqueueResult[]>()(
    await utils.addJobs([
      { identifier: 't', payload: {} },
      { identifier: 't', payload: {}, unique: {} },
      { identifier: 't', payload: {} },
    ]),
  );
  exactly<readonly Job[] | EnqueueResult[]>()(await utils.addJobs([] as UniqueAddJobsSpec[]));
  exactly<EnqueueResult[]>()(await utils.addJobs([] as UniqueAddJobsSpecWithPolicy[]));
  exactly<readonly Job[]>()(await utils.addJobs([] as PlainAddJobsSpec[]));
  exactly<readonly Job[]>()(await utils.addJobs([] as AddJobsJobSpec[]));
  // @ts-expect-error the payload of a declared task is checked in an entry
  await utils.addJobs([{ identifier: 'ojs_type_test_email', payload: { to: 7 } }]);
  // @ts-expect-error the payload of a declared task is checked in an entry with a policy
  await utils.addJobs([{ identifier: 'ojs_type_test_email', payload: { to: 7 }, unique: {} }]);
  // @ts-expect-error misspelt strategy
  await utils.addJobs([{ identifier: 't', payload: {}, unique: { on_conflict: 'ignroe' } }]);
  // jobKeyPreserveRunAt is for Graphile's addJobs: with it, only the general form applies.
  exactly<readonly Job[] | EnqueueResult[]>()(await utils.addJobs([{ identifier: 't', payload: {}, unique: {} }], true));
}

/** addJobWithClient: the same payload and result types on the caller's transaction. */
export async function clientAddJob(client: TransactionClientLike, pool: pg.Pool): Promise<void> {
  exactly<Job>()(await addJobWithClient(client, 'ojs_type_test_email', { to: 'a' }));
  exactly<Job>()(await addJobWithClient(client, 'ojs_type_test_email', { to: 'a' }, undefined, { uniqueSchema: 'u' }));
  exactly<EnqueueResult>()(await addJobWithClient(client, 'ojs_type_test_email', { to: 'a' }, { unique: readmePolicy }));
  exactly<Job>()(await addJobWithClient(client, 't', {}, { unique: null }));
  exactly<Job>()(await addJobWithClient(client, 't', {}, { priority: 3 }));
  exactly<EnqueueResult>()(await addJobWithClient(client, 't', {}, { unique: { states: UNIQUE_STATE_GROUPS.all } }));
  exactly<EnqueueResult>()(await addJobWithClient(client, 't', {}, withPolicy));
  exactly<EnqueueResult | Job>()(await addJobWithClient(client, 't', {}, uniqueSpec));
  // @ts-expect-error the payload of a declared task is checked
  await addJobWithClient(client, 'ojs_type_test_report', { month: '7' }, { unique: {} });
  // @ts-expect-error misspelt field
  await addJobWithClient(client, 't', {}, { unique: { periood: 5 } });
  // @ts-expect-error a pool is not a transaction
  await addJobWithClient(pool, 't', {});
}

/** Task helpers: Graphile's `JobHelpers`, whose addJob/addJobs also take `unique`. */
export async function taskHelpers(helpers: UniqueJobHelpers): Promise<void> {
  exactly<Job>()(await helpers.addJob('ojs_type_test_email', { to: 'a' }));
  exactly<EnqueueResult>()(await helpers.addJob('ojs_type_test_email', { to: 'a' }, { unique: readmePolicy }));
  exactly<EnqueueResult | Job>()(await helpers.addJob('t', {}, uniqueSpec));
  exactly<EnqueueResult[]>()(await helpers.addJobs([{ identifier: 't', payload: {}, unique: allStates }]));
  // @ts-expect-error the payload of a declared task is checked
  await helpers.addJob('ojs_type_test_email', { to: null }, { unique: {} });
  // @ts-expect-error misspelt field
  await helpers.addJob('t', {}, { unique: { periood: 5 } });
  // A task written for Graphile's helpers gets these.
  const graphileHelpers: JobHelpers = helpers;
  void graphileHelpers;
}

/** withUniqueHelpers takes Graphile's own tasks and gives back Graphile tasks. */
export function taskLists(
  graphileTask: Task,
  emailTask: Task<'ojs_type_test_email'>,
  uniqueEmailTask: UniqueTask<'ojs_type_test_email'>,
  list: TaskList,
): void {
  const wrapped = withUniqueHelpers({
    plain: graphileTask,
    ojs_type_test_email: emailTask,
    // Inline tasks: the payload is typed by its name, the helpers take `unique`.
    ojs_type_test_report: async (payload, helpers) => {
      const month: number = payload.month;
      exactly<EnqueueResult>()(await helpers.addJob('ojs_type_test_email', { to: `${month}` }, { unique: { keys: ['type', 'args'] } }));
    },
    // An undeclared name: the payload Graphile's own TaskList gives it.
    other: async (payload, helpers) => {
      exactly<Parameters<NonNullable<TaskList['other']>>[0]>()(payload);
      exactly<Job>()(await helpers.addJob('other', payload));
    },
  });
  exactly<Task<'ojs_type_test_email'>>()(wrapped.ojs_type_test_email);
  exactly<Task<'ojs_type_test_report'>>()(wrapped.ojs_type_test_report);
  exactly<Task>()(wrapped.other);
  const taskList: TaskList = { ...wrapped, another: graphileTask };
  const fileTask: Task = withUniqueHelpers({ t: graphileTask }).t;
  const fromList: TaskList = withUniqueHelpers(list, { workerSchema: 'graphile_worker' });
  withUniqueHelpers({ ojs_type_test_email: uniqueEmailTask });
  // @ts-expect-error a task's payload type must match its declared name
  withUniqueHelpers({ ojs_type_test_report: emailTask });
  withUniqueHelpers({
    // @ts-expect-error the payload of a declared task is checked inside an inline task
    ojs_type_test_email: (payload) => void payload.month,
  });
  withUniqueHelpers({
    t: async (_payload, helpers) => {
      // @ts-expect-error misspelt field in a policy inside a task
      await helpers.addJob('t', {}, { unique: { periood: 5 } });
    },
  });
  void taskList;
  void fileTask;
  void fromList;
}

/**
 * One name per schema: `uniqueSchema` (the adapter's) and `workerSchema` (Graphile's) in the
 * adapter's own options; Graphile's `schema` where Graphile's options are taken.
 */
export async function schemaOptions(client: TransactionClientLike, pgPool: PgPoolLike): Promise<void> {
  const names = { uniqueSchema: 'ojs_unique', workerSchema: 'graphile_worker' };
  await addJobWithClient(client, 't', {}, { unique: {} }, names);
  withUniqueHelpers({}, names);
  makeReclaimTask({ ...names, grace: 'PT1H' });
  makeUniqueJobsPreset({ uniqueSchema: 'ojs_unique' });
  const backend = createGraphileWorkerBackend({ pgPool, ...names });
  exactly<{ workerSchema: string; uniqueSchema: string }>()({ ...backend.schemas });
  await makeUniqueWorkerUtils({ pgPool: pgPool as never, schema: 'graphile_worker', uniqueSchema: 'ojs_unique' });
  await makeUniqueWorkerUtils({ pgPool: pgPool as never, preset: { worker: { schema: 'graphile_worker' } } });
  // @ts-expect-error `schema` is not an option: the adapter's schema is uniqueSchema
  await addJobWithClient(client, 't', {}, { unique: {} }, { schema: 'ojs_unique' });
  // @ts-expect-error Graphile's schema is workerSchema
  withUniqueHelpers({}, { graphileSchema: 'graphile_worker' });
  // @ts-expect-error `schema` is not an option: the adapter's schema is uniqueSchema
  makeReclaimTask({ schema: 'ojs_unique' });
  // @ts-expect-error `schema` is not an option: the adapter's schema is uniqueSchema
  makeUniqueJobsPreset({ schema: 'ojs_unique' });
  // @ts-expect-error Graphile's schema is workerSchema
  createGraphileWorkerBackend({ pgPool, graphileSchema: 'graphile_worker' });
  // @ts-expect-error Graphile's options name Graphile's schema `schema`
  await makeUniqueWorkerUtils({ pgPool: pgPool as never, workerSchema: 'graphile_worker' });
  // @ts-expect-error Graphile's schema is workerSchema
  void backend.schemas.graphileSchema;
}

/** The key lookups: named as addJob names a job (payload typed by GraphileWorker.Tasks), or by key; typed results. */
export async function keyLookups(utils: UniqueWorkerUtils, pgPool: PgPoolLike): Promise<void> {
  exactly<OjsJob | null>()(await utils.findUniqueJob('ojs_type_test_email', { to: 'a' }, { unique: {} }));
  exactly<number>()(await utils.releaseUniqueKey({ uniqueness_key: 'k' }));
  // @ts-expect-error the payload of a task named in GraphileWorker.Tasks
  await utils.findUniqueJob('ojs_type_test_email', { month: 1 }, { unique: {} });
  // @ts-expect-error a lookup by job needs a policy: no unique, no key
  await utils.findUniqueJob('ojs_type_test_email', { to: 'a' }, {});
  // @ts-expect-error the key's field is uniqueness_key
  await utils.releaseUniqueKey({ key: 'k' });
  const backend = createGraphileWorkerBackend({ pgPool });
  exactly<OjsJob | null>()(await backend.findUniqueJob({ type: 't', args: {}, unique: {} }));
  exactly<number>()(await backend.releaseUniqueKey({ uniqueness_key: 'k' }));
}

/** Cron items with a policy: Graphile's items in, parsed items out; the relay is a Graphile Task. */
export function cronItems(parsed: ParsedCronItem[]): void {
  exactly<ParsedCronItem[]>()(uniqueCronItems(parsed, { keys: ['type'] }));
  exactly<ParsedCronItem[]>()(uniqueCronItems([{ task: 't', match: '* * * * *', options: { jobKey: 'k' } }]));
  uniqueCronItems(parsed, (item) => (item.task === 't' ? { on_conflict: 'ignore' } : null));
  const relay: Task = makeUniqueCronTask({ uniqueSchema: 'ojs_unique', workerSchema: 'graphile_worker' });
  void relay;
  // @ts-expect-error not a policy
  uniqueCronItems(parsed, { on_conflict: 'nope' });
}

/** The backend's batch: OJS jobs in, an outcome per job out; its one option is named exactly. */
export async function backendEnqueueMany(pgPool: PgPoolLike): Promise<void> {
  const backend = createGraphileWorkerBackend({ pgPool });
  exactly<EnqueueResult[]>()(
    await backend.enqueueMany([
      { type: 't', args: {}, unique: readmePolicy },
      { type: 't', args: [] },
    ]),
  );
  await backend.enqueueMany([], {
    beforeCommit: async (client, results) => {
      exactly<readonly EnqueueResult[]>()(results);
      await client.query('select 1');
    },
  });
  // @ts-expect-error misspelt option
  await backend.enqueueMany([], { beforeComit: async () => undefined });
  // @ts-expect-error a Graphile task spec is not an OJS job
  await backend.enqueueMany([{ identifier: 't', payload: {} }]);
}

/** Installing as its own step: schema options named as everywhere else; the result says what it did. */
export async function installStep(pgPool: PgPoolLike): Promise<void> {
  const result = await runUniqueJobsMigrations({ pgPool, workerSchema: 'gw', uniqueSchema: 'ou' });
  exactly<number>()(result.version);
  exactly<boolean>()(result.functions);
  await runUniqueJobsMigrations({ connectionString: 'postgres://127.0.0.1/app' });
  // @ts-expect-error misspelt schema option
  await runUniqueJobsMigrations({ pgPool, uniqueschema: 'ou' });
  const error: unknown = null;
  if (error instanceof UniqueSchemaVersionError) {
    exactly<number | null>()(error.found);
    exactly<number>()(error.required);
    exactly<boolean>()(error.preRelease);
    exactly<boolean | 'unknown'>()(error.written);
  }
}

export async function registeredPolicies(pool: PgPoolLike, client: TransactionClientLike): Promise<void> {
  const policies = { ojs_type_test_report: { keys: ['type'], on_conflict: 'ignore' } } as const;
  await makeUniqueWorkerUtils({ pgPool: pool as never, policies, reportOnly: false });
  withUniqueHelpers({}, { policies });
  await addJobWithClient(client, 'ojs_type_test_report', { month: 1 }, undefined, { policies });
  // @ts-expect-error a misspelt strategy in a registered policy fails to compile
  await makeUniqueWorkerUtils({ pgPool: pool as never, policies: { ojs_type_test_report: { on_conflict: 'ignroe' } } });
  // @ts-expect-error a misspelt dimension too
  withUniqueHelpers({}, { policies: { ojs_type_test_report: { keys: ['argz'] } } });
  // @ts-expect-error report-only is a boolean
  withUniqueHelpers({}, { reportOnly: 'yes' });
}
