/**
 * The workflow routes of the OJS HTTP binding (§14, level 3) with the workflows spec's
 * primitives (ojs-workflows §11): `POST /ojs/v1/workflows` (chain, group, batch),
 * `GET /ojs/v1/workflows/:id`, `DELETE /ojs/v1/workflows/:id`.
 *
 * A workflow is a record on the backend (workflow-record.ts, one per store:
 * *-workflow-records.ts) plus ordinary jobs of the host: creation writes the record, then enqueues
 * a chain's first step or every job of a group or batch (one batch: all-or-nothing as a batch
 * PUSH); each ack or nack that ends a job of it advances the record (workflow-advance.ts).
 *
 * The view carries the spec's shape (`steps`/`jobs` with per-job state, `metadata` with its
 * counts) and the conformance suite's flat counts beside it (`steps_total`, `steps_completed` for
 * a chain; `jobs_total`, `jobs_completed`, `jobs_failed` for a group or batch).
 */
import type { FastifyInstance } from 'fastify';
import { InvalidJobInputError, underPath } from '../src/errors.js';
import type { JsonValue } from '../src/job.js';
import { isPlainObject } from '../src/json-rules.js';
import { prepareUnique, type PrepareUniqueOptions } from '../src/unique-enqueue.js';
import { uuidv7 } from '../src/uuid-v7.js';
import type { GatewayJob, GatewayJobInput, GatewayStore } from './gateway-store.js';
import { HttpError } from './http-error.js';
import { applyPushOptions } from './push-options.js';
import { cancelWorkflowJobs, reconcileWorkflow } from './workflow-advance.js';
import { parseWorkflow } from './workflow-definition.js';
import { CALLBACK_NAMES, entriesOf, newWorkflowRecord, type WorkflowEntry, type WorkflowRecord } from './workflow-record.js';

const WORKFLOW_ID_PARAMS = { type: 'object', properties: { id: { type: 'string', minLength: 1, maxLength: 128 } } } as const;

export function registerWorkflowRoutes(app: FastifyInstance, store: GatewayStore): void {
  app.post('/ojs/v1/workflows', async (request, reply) => {
    const body = request.body;
    if (!isPlainObject(body)) throw new HttpError(400, 'invalid_payload', 'the request body must be a JSON object');
    let definition: ReturnType<typeof parseWorkflow>;
    try {
      definition = parseWorkflow(body);
    } catch (error) {
      throw invalidWorkflow(error);
    }
    const parsed = [...definition.jobs, ...CALLBACK_NAMES.flatMap((name) => definition.callbacks[name] ?? [])];
    // A caller-chosen id must be free (a fresh UUIDv7 is); every job gets its id now: the record names each before any is enqueued.
    for (const push of parsed) {
      if (push.input.id !== undefined && (await store.getJob(push.input.id))) {
        throw new HttpError(409, 'duplicate', 'a job with this id already exists', { job_id: push.input.id });
      }
      push.input = { ...push.input, id: push.input.id ?? uuidv7() };
    }
    const extensions = store.capabilities.unique_jobs.extensions ?? [];
    try {
      definition.jobs.forEach((push, index) =>
        check(push.input, `${definition.type === 'chain' ? 'steps' : 'jobs'}[${index}].`, extensions),
      );
      for (const name of CALLBACK_NAMES) {
        const push = definition.callbacks[name];
        if (push) check(push.input, `callbacks.${name}.`, extensions);
      }
    } catch (error) {
      throw invalidWorkflow(error);
    }
    await applyPushOptions(store, parsed);
    const callbacks = Object.fromEntries(
      CALLBACK_NAMES.flatMap((name) => (definition.callbacks[name] ? [[name, definition.callbacks[name].input]] : [])),
    );
    const record = newWorkflowRecord(
      uuidv7(),
      definition.type,
      definition.name,
      definition.jobs.map((push) => push.input),
      callbacks,
      new Date(),
    );
    await store.workflows.create(record);
    const first = record.jobs.filter((entry) => entry.status === 'enqueued').map((entry) => entry.input as GatewayJobInput);
    const results = first.length === 1 ? [await store.enqueue(first[0]!)] : await store.enqueueBatch(first);
    const jobs = new Map(results.map((result) => [result.job.id, result.job]));
    void reply.status(201).header('Location', `/ojs/v1/workflows/${record.id}`);
    return { workflow: workflowView(record, jobs) };
  });

  app.get<{ Params: { id: string } }>('/ojs/v1/workflows/:id', { schema: { params: WORKFLOW_ID_PARAMS } }, async (request) => {
    const found = await reconcileWorkflow(store, request.params.id);
    if (!found) throw workflowNotFound(request.params.id);
    return { workflow: workflowView(found.record, found.jobs) };
  });

  app.delete<{ Params: { id: string } }>('/ojs/v1/workflows/:id', { schema: { params: WORKFLOW_ID_PARAMS } }, async (request) => {
    const id = request.params.id;
    const done = await cancelWorkflowJobs(store, id);
    if (!done) throw workflowNotFound(id);
    if (!done.cancelled) {
      throw new HttpError(409, 'conflict', `workflow ${id} is already in terminal state '${done.record.state}'`, {
        workflow_id: id,
        current_state: done.record.state,
      });
    }
    const entries = entriesOf(done.record);
    const view = workflowView(done.record, new Map());
    return {
      workflow: {
        ...view,
        cancelled_at: done.record.cancelled_at,
        steps_cancelled: entries.filter((entry) => entry.status === 'cancelled' || entry.status === 'enqueued').length,
        steps_already_completed: entries.filter((entry) => entry.status === 'completed').length,
      },
    };
  });
}

/** The core's input rules for one workflow job (the checks a PUSH gets), issues named under `at`. */
function check(input: GatewayJobInput, at: string, extensions: PrepareUniqueOptions['extensions']): void {
  const { extras: _extras, pending: _pending, ...job } = input;
  try {
    prepareUnique(job, { extensions });
  } catch (error) {
    throw underPath(error, at);
  }
}

/** ojs-workflows §11.1: `invalid_workflow`, each problem in `validation_errors` (and `issues`, as a PUSH names them). */
function invalidWorkflow(error: unknown): unknown {
  if (!(error instanceof InvalidJobInputError)) return error;
  const message = error.issues.map((issue) => `${issue.path}: ${issue.message}`).join('; ');
  return new HttpError(400, 'invalid_workflow', message, {
    field: error.issues[0]?.path,
    issues: error.issues,
    validation_errors: error.issues.map((issue) => ({ path: `$.${issue.path}`, message: issue.message })),
  });
}

function workflowNotFound(id: string): HttpError {
  return new HttpError(
    404,
    'not_found',
    `workflow ${id} not found`,
    { resource_type: 'workflow', resource_id: id },
    'check the workflow id',
  );
}

/** A job's state as a workflow step's (ojs-workflows §4.4): waiting, pending, active, completed, failed, cancelled. */
function stepState(entry: WorkflowEntry, job: GatewayJob | undefined): string {
  if (entry.status !== 'enqueued') return entry.status === 'skipped' ? 'skipped' : entry.status;
  if (!job) return 'pending';
  if (job.state === 'active') return 'active';
  if (job.state === 'completed') return 'completed';
  if (job.state === 'discarded') return 'failed';
  if (job.state === 'cancelled') return 'cancelled';
  return 'pending';
}

function entryView(entry: WorkflowEntry, index: number | null, jobs: ReadonlyMap<string, GatewayJob>): Record<string, unknown> {
  const job = jobs.get(entry.job_id);
  const view: Record<string, unknown> = {};
  if (index !== null) view.index = index;
  view.type = entry.input.type;
  view.state = stepState(entry, job);
  view.job_id = entry.status === 'waiting' || (entry.status === 'cancelled' && !job) || entry.status === 'skipped' ? null : entry.job_id;
  if (entry.result !== undefined) view.result = entry.result as JsonValue;
  if (job?.started_at) view.started_at = job.started_at;
  if (job?.completed_at && (job.state === 'completed' || job.state === 'discarded')) view.completed_at = job.completed_at;
  return view;
}

function workflowView(record: WorkflowRecord, jobs: ReadonlyMap<string, GatewayJob>): Record<string, unknown> {
  const completed = record.jobs.filter((entry) => entry.status === 'completed').length;
  const failed = record.jobs.filter((entry) => entry.status === 'failed').length;
  const started = [...jobs.values()]
    .map((job) => job.started_at)
    .filter((at): at is string => at !== undefined)
    .sort()[0];
  const metadata: Record<string, unknown> = { created_at: record.created_at };
  if (started) metadata.started_at = started;
  if (record.completed_at) metadata.completed_at = record.completed_at;
  if (record.cancelled_at) metadata.cancelled_at = record.cancelled_at;
  Object.assign(metadata, { job_count: record.jobs.length, completed_count: completed, failed_count: failed });
  const view: Record<string, unknown> = { id: record.id, type: record.type, name: record.name, state: record.state };
  const items = record.jobs.map((entry, index) => entryView(entry, index, jobs));
  if (record.type === 'chain') {
    Object.assign(view, { steps_total: record.jobs.length, steps_completed: completed, steps_failed: failed, steps: items });
    const failedAt = record.jobs.findIndex((entry) => entry.status === 'failed');
    if (failedAt >= 0) view.failed_step_index = failedAt;
  } else {
    Object.assign(view, { jobs_total: record.jobs.length, jobs_completed: completed, jobs_failed: failed, jobs: items });
  }
  if (record.type === 'batch') {
    const callbacks: Record<string, unknown> = {};
    for (const name of CALLBACK_NAMES) {
      const entry = record.callbacks[name];
      if (entry) callbacks[name] = entryView(entry, null, jobs);
    }
    view.callbacks = callbacks;
  }
  const failedIds = entriesOf(record)
    .filter((entry) => entry.status === 'failed')
    .map((entry) => entry.job_id);
  if (failedIds.length > 0) {
    view.failed_job_ids = failedIds;
    view.errors = failedIds.flatMap((id) => {
      const job = jobs.get(id);
      return job?.error ? [{ job_id: id, code: job.error.code ?? job.error.type, message: job.error.message, attempt: job.attempt }] : [];
    });
  }
  Object.assign(view, { created_at: record.created_at, metadata });
  if (record.completed_at) view.completed_at = record.completed_at;
  return view;
}
