/**
 * The conformance suite through the entry points Graphile Worker users call: a subject whose
 * `enqueue` maps the OJS `JobInput` to `addJob(identifier, payload, spec)` (or a one-entry
 * `addJobs`) of `makeUniqueWorkerUtils`, to `addJobWithClient` inside a BEGIN … COMMIT on a
 * client of the caller's, or to `helpers.addJob` inside a running task wrapped by
 * `withUniqueHelpers`. `getJob`, `cancel` and the lifecycle go through `createGraphileWorkerBackend`
 * on the same schemas, which reads the same ledger.
 *
 * JobInput → Graphile (docs/graphile-worker.md, graphile-worker-task-spec.ts):
 *   type → task identifier; args → payload; queue → spec.queue; meta → spec.meta; id → spec.id;
 *   scheduled_at → spec.runAt (a Date); max_attempts → spec.maxAttempts;
 *   priority → spec.priority = −priority (Graphile runs smaller first); unique → spec.unique.
 * A job without `unique` is Graphile's own add, which has no OJS queue, meta or id: such a job is
 * inexpressible when it sets them, and its result (a Graphile `Job`) is viewed as an OJS job here.
 */
import pg from 'pg';
import { Logger, makeWorkerUtils, run, type Job, type Runner, type TaskSpec, type WorkerUtils } from 'graphile-worker';
import {
  addJobWithClient,
  makeUniqueJobsPreset,
  makeUniqueWorkerUtils,
  withUniqueHelpers,
  type GraphileWorkerBackend,
  type UniqueAddJobsSpec,
  type UniqueJobHelpers,
  type UniqueTaskSpec,
  type UniqueWorkerUtils,
} from '../../../adapters/graphile-worker/index.js';
import { type EnqueueResult, type JobInput, type OjsJob } from '../../../src/index.js';
import { DEFAULT_QUEUE } from '../../../src/internal.js';
import {
  createGraphileWorkerSubject,
  databaseUrl,
  makeSubjectPool,
  quietLogger,
  type GraphileWorkerSubject,
} from '../subjects/graphile-worker.js';
import type { TestSchemas } from '../../adapters/graphile-worker-fixture.js';
import { Inexpressible } from './bullmq-entry-points.js';
import type { ConformanceSubject } from '../conformance-subject.js';

export const GRAPHILE_ENTRY_POINTS = [
  'makeUniqueWorkerUtils.addJob',
  'makeUniqueWorkerUtils.addJobs',
  'addJobWithClient',
  'withUniqueHelpers.addJob',
] as const;
export type GraphileEntryPoint = (typeof GRAPHILE_ENTRY_POINTS)[number];

/** The entry points whose refused add leaves nothing written, its duplicate count included. */
const REFUSAL_UNDONE: Partial<Record<GraphileEntryPoint, string>> = {
  'makeUniqueWorkerUtils.addJobs': 'addJobs is all-or-nothing: a refused entry rolls the batch back',
  addJobWithClient: 'a refused add is rolled back to its savepoint, in your transaction',
};

/** The task that enqueues through its helpers (withUniqueHelpers); it never runs a suite's job. */
export const HELPERS_DRIVER_TASK = 'ojs_conformance_enqueue_through_helpers';

export interface GraphileAddArguments {
  identifier: string;
  payload: unknown;
  spec: UniqueTaskSpec;
}

export function graphileAddArguments(input: JobInput): GraphileAddArguments | Inexpressible {
  const spec: UniqueTaskSpec = {};
  const unique = Object.hasOwn(input, 'unique') ? input.unique : undefined;
  if (unique !== undefined) spec.unique = unique as UniqueTaskSpec['unique'];
  // `unique: null` is no policy (a plain add), like an absent one.
  const plain = unique === undefined || unique === null;
  if (plain) {
    if (input.queue !== undefined && input.queue !== DEFAULT_QUEUE)
      return new Inexpressible('a plain Graphile add (no unique) has no OJS queue');
    if (input.meta !== undefined && Object.keys(input.meta).length > 0)
      return new Inexpressible('a plain Graphile add (no unique) has no OJS meta');
    if (input.id !== undefined) return new Inexpressible('a plain Graphile add (no unique) has no caller-chosen id');
  }
  if (!plain) {
    if (input.queue !== undefined) spec.queue = input.queue;
    if (input.meta !== undefined) spec.meta = input.meta;
    if (input.id !== undefined) spec.id = input.id;
  }
  if (input.scheduled_at !== undefined) spec.runAt = input.scheduled_at instanceof Date ? input.scheduled_at : new Date(input.scheduled_at);
  if (input.max_attempts !== undefined) spec.maxAttempts = input.max_attempts;
  // A priority that is not a number is passed as given: the adapter must refuse it, not this mapping.
  if (input.priority !== undefined && input.priority !== 0)
    spec.priority = typeof input.priority === 'number' ? -input.priority : input.priority;
  return { identifier: input.type, payload: input.args, spec };
}

/** A Graphile `Job` (the answer of a plain add) as the OJS job it is. */
export function ojsViewOfGraphileJob(job: Job): OjsJob {
  const runAt = new Date(job.run_at);
  return {
    id: String(job.id),
    type: job.task_identifier,
    queue: DEFAULT_QUEUE,
    args: job.payload as OjsJob['args'],
    meta: {},
    state: runAt.getTime() > Date.now() ? 'scheduled' : 'available',
    attempt: job.attempts,
    max_attempts: job.max_attempts,
    priority: job.priority === 0 ? 0 : -job.priority,
    created_at: new Date(job.created_at).toISOString(),
    scheduled_at: runAt.toISOString(),
    unique: null,
    uniqueness_key: null,
  };
}

interface DriverRequest {
  args: GraphileAddArguments;
  settle(result: { ok: true; value: unknown } | { ok: false; error: unknown }): void;
}

/**
 * Enqueues through one entry point, on the subject's schemas. Opens what that entry point needs
 * (worker utils; for the helpers, a runner of the driver task with a pool of its own).
 */
export class GraphileEntry {
  #utils: UniqueWorkerUtils | null = null;
  #driverPool: pg.Pool | null = null;
  #driverUtils: WorkerUtils | null = null;
  #runner: Runner | null = null;
  readonly #requests = new Map<number, DriverRequest>();
  #next = 0;
  /** The driver runner's last error or warning (a worker that could not fetch, why it stopped). */
  #runnerError: unknown = null;
  /** Set once the driver runner stopped: every later call fails with it at once. */
  #runnerStopped: Error | null = null;

  constructor(
    readonly entry: GraphileEntryPoint,
    readonly pool: pg.Pool,
    readonly schemas: TestSchemas,
  ) {}

  async open(): Promise<void> {
    const { graphileSchema, uniqueSchema } = this.schemas;
    if (this.entry.startsWith('makeUniqueWorkerUtils.')) {
      this.#utils = await makeUniqueWorkerUtils({
        pgPool: this.pool,
        schema: graphileSchema,
        uniqueSchema,
        countDuplicates: true,
        logger: quietLogger,
      });
    }
    if (this.entry === 'withUniqueHelpers.addJob') {
      this.#driverPool = makeSubjectPool(databaseUrl(), 4);
      this.#driverUtils = await makeWorkerUtils({ pgPool: this.#driverPool, schema: graphileSchema, logger: quietLogger });
      const taskList = withUniqueHelpers(
        {
          [HELPERS_DRIVER_TASK]: async (payload: unknown, helpers: UniqueJobHelpers) => {
            const request = this.#requests.get((payload as { request: number }).request);
            if (!request) return; // a request whose caller gave up; nothing to do
            this.#requests.delete((payload as { request: number }).request);
            try {
              const { identifier, payload: jobPayload, spec } = request.args;
              request.settle({ ok: true, value: await helpers.addJob(identifier, jobPayload, spec as never) });
            } catch (error) {
              request.settle({ ok: false, error });
            }
          },
        },
        { uniqueSchema, workerSchema: graphileSchema, countDuplicates: true },
      );
      this.#runner = await run({
        pgPool: this.#driverPool,
        schema: graphileSchema,
        taskList,
        concurrency: 4,
        noHandleSignals: true,
        pollInterval: 100,
        // Kept, not printed: a call that fails because the runner stopped says why.
        logger: new Logger(() => (level, message) => {
          if (level === 'error' || level === 'warning') this.#runnerError = new Error(message);
        }),
        preset: { extends: [makeUniqueJobsPreset({ uniqueSchema })] },
      });
      const runner = this.#runner;
      runner.events.on('worker:getJob:error', ({ error }) => void (this.#runnerError = error));
      runner.events.on('pool:listen:error', ({ error }) => void (this.#runnerError = error));
      // A runner that stopped (crashed) answers nothing more: fail what waits for it.
      const stopped = (error: unknown) => {
        const why = error ?? this.#runnerError;
        this.#runnerStopped = new Error(`${HELPERS_DRIVER_TASK}: the runner stopped (${why instanceof Error ? why.message : String(why)})`);
        this.#failPending(this.#runnerStopped);
      };
      runner.promise.then(() => stopped(null), stopped);
    }
  }

  #failPending(error: unknown): void {
    for (const [id, request] of this.#requests) {
      this.#requests.delete(id);
      request.settle({ ok: false, error });
    }
  }

  /** The raw add: the entry point's own answer (an EnqueueResult, or a Graphile Job for a plain add). */
  async add(args: GraphileAddArguments): Promise<EnqueueResult | Job> {
    const { identifier, payload, spec } = args;
    switch (this.entry) {
      case 'makeUniqueWorkerUtils.addJob':
        return this.#utils!.addJob(identifier, payload, spec as never);
      case 'makeUniqueWorkerUtils.addJobs': {
        const [first] = await this.#utils!.addJobs([{ identifier, payload, ...spec } as UniqueAddJobsSpec]);
        return first as EnqueueResult | Job;
      }
      case 'addJobWithClient': {
        const client = await this.pool.connect();
        try {
          await client.query('begin');
          const result = await addJobWithClient(client, identifier, payload, spec as never, {
            uniqueSchema: this.schemas.uniqueSchema,
            workerSchema: this.schemas.graphileSchema,
            countDuplicates: true,
          });
          await client.query('commit');
          return result;
        } catch (error) {
          await client.query('rollback').catch(() => undefined);
          throw error;
        } finally {
          client.release();
        }
      }
      case 'withUniqueHelpers.addJob': {
        if (this.#runnerStopped) throw this.#runnerStopped;
        const request = this.#next++;
        let settle: DriverRequest['settle'];
        const settled = new Promise<{ ok: true; value: unknown } | { ok: false; error: unknown }>((resolve) => {
          settle = resolve;
          this.#requests.set(request, { args, settle: resolve });
        });
        await this.#driverUtils!.addJob(HELPERS_DRIVER_TASK, { request }, { maxAttempts: 1 } satisfies TaskSpec);
        // The task runs in moments; a runner that cannot reach the database (another process
        // holding every connection, say) must fail the call, not hang the suite.
        const watchdog = setTimeout(() => {
          if (!this.#requests.delete(request)) return;
          const last = this.#runnerError instanceof Error ? this.#runnerError.message : String(this.#runnerError);
          settle!({
            ok: false,
            error: new Error(`${HELPERS_DRIVER_TASK}: the task did not run within 15 s (the runner's last error: ${last})`),
          });
        }, 15_000);
        const outcome = await settled.finally(() => clearTimeout(watchdog));
        if (!outcome.ok) throw outcome.error;
        return outcome.value as EnqueueResult | Job;
      }
    }
  }

  async enqueue(input: JobInput): Promise<EnqueueResult> {
    const args = graphileAddArguments(input);
    if (args instanceof Inexpressible) throw new Error(`${this.entry} cannot express this job: ${args.reason}`);
    return toResult(await this.add(args));
  }

  async close(): Promise<void> {
    // A runner that stopped by itself has already failed the calls waiting on it.
    if (this.#runner && !this.#runnerStopped) await this.#runner.stop();
    await this.#driverUtils?.release();
    await this.#driverPool?.end();
    await this.#utils?.release();
  }
}

export function toResult(answer: EnqueueResult | Job): EnqueueResult {
  return 'outcome' in answer ? answer : { outcome: 'created', job: ojsViewOfGraphileJob(answer) };
}

/**
 * A subject enqueueing through `entry` on `schemas`. `fresh` (default true) drops the schemas first
 * (a pair of the test's own); false for a file's shared pair (graphile-worker-fixture.ts), whose
 * rows the fixture has reset.
 */
export async function createGraphileEntrySubject(
  entry: GraphileEntryPoint,
  schemas: TestSchemas,
  { fresh = true }: { fresh?: boolean } = {},
): Promise<ConformanceSubject & { through: GraphileEntry; base: GraphileWorkerSubject }> {
  const base = await createGraphileWorkerSubject({ ...schemas, fresh });
  const through = new GraphileEntry(entry, base.pool, schemas);
  try {
    await through.open();
  } catch (error) {
    await through.close().catch(() => undefined);
    await base.close({ passed: false });
    throw error;
  }
  const backend: GraphileWorkerBackend = base.backend;
  return {
    base,
    through,
    clock: base.clock,
    start: (id) => base.start(id),
    makeDue: (id) => base.makeDue(id),
    backend: {
      capabilities: backend.capabilities,
      enqueue: (input: JobInput) => through.enqueue(input),
      getJob: (id: string) => backend.getJob(id),
      cancel: (id: string) => backend.cancel(id),
      close: () => backend.close(),
    },
    inexpressible: { plainCustomId: "a plain addJob (no unique) is Graphile Worker's own, which has no caller-chosen id" },
    ...(REFUSAL_UNDONE[entry] ? { refusalUndone: REFUSAL_UNDONE[entry] } : {}),
    async close(result) {
      await through.close();
      await base.close(result);
    },
  };
}
