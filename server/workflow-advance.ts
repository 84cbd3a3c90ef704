/**
 * How a workflow moves on: the one place that changes a workflow record (a compare-and-swap on
 * its version, read again and retried when another gateway process wrote first) and enqueues what
 * the change released. The stores call `settleWorkflowJob` from their ack and nack, once the job
 * has ended; the workflow routes call `cancelWorkflowJobs` and `reconcileWorkflow`.
 *
 * Exactly once: a job's outcome is recorded by the one write that moves its entry out of
 * `enqueued` (a second settle of it changes nothing), and that write marks what it releases
 * `enqueued`, so only its writer enqueues them, each under the id fixed at creation (a backend
 * refuses a second job with a taken id, so a repeated enqueue is harmless).
 */
import { KeyLock } from '../adapters/memory/key-lock.js';
import { BackendError, InvalidJobInputError, InvalidTransitionError, JobNotFoundError } from '../src/errors.js';
import type { GatewayJob, GatewayJobInput, GatewayStore, VersionedWorkflow, WorkflowRecords } from './gateway-store.js';
import {
  cancelWorkflow,
  entriesOf,
  isTerminalWorkflow,
  settle,
  type JobOutcome,
  type WorkflowEntry,
  type WorkflowRecord,
} from './workflow-record.js';

/** Writes lost to another process before giving up (each one means that process moved the workflow on). */
const CAS_ATTEMPTS = 20;
/** Each store's changes of one workflow, one at a time: contention is then between processes only. */
const locks = new WeakMap<GatewayStore, KeyLock>();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Applies `change` to the record `load` finds, written back only if no other write came between:
 * otherwise read again and applied again, after a short random pause (another process is
 * writing). Changes made through one store are serialised per workflow. `change` returns null
 * when it changes nothing (nothing is written). Null when there is no record.
 */
export async function updateWorkflow<T>(
  store: GatewayStore,
  load: (records: WorkflowRecords) => Promise<VersionedWorkflow | null>,
  change: (record: WorkflowRecord) => T | null,
): Promise<{ record: WorkflowRecord; value: T | null } | null> {
  const found = await load(store.workflows);
  if (!found) return null;
  let lock = locks.get(store);
  if (!lock) locks.set(store, (lock = new KeyLock()));
  return lock.run(found.record.id, async () => {
    for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
      if (attempt > 0) await sleep(Math.random() * 5 * attempt);
      const stored = await store.workflows.read(found.record.id);
      if (!stored) return null;
      const record = structuredClone(stored.record);
      const value = change(record);
      if (value === null) return { record: stored.record, value: null };
      if (await store.workflows.write(record, stored.version)) return { record, value };
    }
    throw new BackendError(store.backend, 'a workflow record changed under every attempt to update it', { written: false });
  });
}

/** The workflow outcome of a job in `state`, or null while it may still run. */
function outcomeOf(job: GatewayJob): JobOutcome | null {
  if (job.state === 'completed') return 'completed';
  if (job.state === 'discarded' || job.state === 'cancelled') return 'failed';
  return null;
}

/**
 * Records that `job` ended in its workflow, if it belongs to one, and enqueues what that releases
 * (a chain's next step, a batch's callbacks). One lookup for a job outside any workflow.
 */
export async function settleWorkflowJob(store: GatewayStore, job: GatewayJob): Promise<void> {
  const outcome = outcomeOf(job);
  if (outcome === null) return;
  const updated = await updateWorkflow(
    store,
    (records) => records.ofJob(job.id),
    (record) => settle(record, job.id, outcome, outcome === 'completed' ? job.result : undefined, new Date()),
  );
  if (updated?.value && updated.value.length > 0) await enqueueReleased(store, updated.record.id, updated.value);
}

/**
 * Enqueues released entries, each under its own id: one already taken was enqueued before (by
 * this release, retried, or a reconcile). Should the workflow have been cancelled meanwhile (its
 * cancel found the job not yet written), the job just written is cancelled too.
 */
export async function enqueueReleased(store: GatewayStore, workflowId: string, entries: readonly WorkflowEntry[]): Promise<void> {
  for (const entry of entries) {
    try {
      await store.enqueue(entry.input as GatewayJobInput);
    } catch (error) {
      if (!isTakenId(error)) throw error;
    }
  }
  const now = await store.workflows.read(workflowId);
  if (now?.record.state === 'cancelled')
    await cancelJobs(
      store,
      entries.map((entry) => entry.job_id),
    );
}

/**
 * Cancels a running workflow (its entries not yet enqueued, then its enqueued jobs that have not
 * started). Null when there is no such workflow; `cancelled: false` when it had ended already.
 */
export async function cancelWorkflowJobs(store: GatewayStore, id: string): Promise<{ record: WorkflowRecord; cancelled: boolean } | null> {
  const updated = await updateWorkflow(
    store,
    (records) => records.read(id),
    (record) => cancelWorkflow(record, new Date()),
  );
  if (!updated) return null;
  if (updated.value === null) return { record: updated.record, cancelled: false };
  await cancelJobs(store, updated.value);
  return { record: updated.record, cancelled: true };
}

/** Cancels each job that has not started: an active one is left to finish, a finished or absent one as it is. */
async function cancelJobs(store: GatewayStore, ids: readonly string[]): Promise<void> {
  for (const id of ids) {
    try {
      // Graceful (ojs-workflows §11.3): a running job is left to finish; its outcome is recorded.
      if ((await store.getJob(id))?.state === 'active') continue;
      await store.cancel(id);
    } catch (error) {
      if (!(error instanceof InvalidTransitionError || error instanceof JobNotFoundError)) throw error;
    }
  }
}

/**
 * Catches a running workflow up with its jobs before it is shown: an enqueued entry whose job
 * ended without being settled (the process that ended it stopped between the two, or a host's
 * own worker ran it) is settled now, and one whose job is missing (its release stopped before
 * the enqueue) is enqueued. Returns the record, and the jobs read (by id), or null.
 */
export async function reconcileWorkflow(
  store: GatewayStore,
  id: string,
): Promise<{ record: WorkflowRecord; jobs: Map<string, GatewayJob> } | null> {
  let stored = await store.workflows.read(id);
  if (!stored) return null;
  const jobs = new Map<string, GatewayJob>();
  let changed = false;
  for (const entry of entriesOf(stored.record)) {
    if (entry.status === 'waiting' || entry.status === 'cancelled' || entry.status === 'skipped') continue;
    const job = await store.getJob(entry.job_id);
    if (job) jobs.set(job.id, job);
    if (entry.status !== 'enqueued' || isTerminalWorkflow(stored.record)) continue;
    if (!job) {
      await enqueueReleased(store, id, [entry]);
      changed = true;
    } else if (outcomeOf(job) !== null) {
      await settleWorkflowJob(store, job);
      changed = true;
    }
  }
  if (changed) {
    stored = (await store.workflows.read(id))!;
    for (const entry of entriesOf(stored.record)) {
      if (entry.status === 'waiting' || jobs.has(entry.job_id)) continue;
      const job = await store.getJob(entry.job_id);
      if (job) jobs.set(job.id, job);
    }
  }
  return { record: stored.record, jobs };
}

/** A refusal of an enqueue because its caller-chosen id is taken. */
function isTakenId(error: unknown): boolean {
  return (
    error instanceof InvalidJobInputError &&
    error.issues.some((issue) => /(^|\.)id$/.test(issue.path) && /already exists/.test(issue.message))
  );
}
