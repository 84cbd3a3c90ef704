/**
 * The record of one OJS workflow (ojs-workflows: chain, group, batch) and its transitions, pure:
 * no I/O. Each store keeps records on its backend (server/*-workflow-records.ts) and every change
 * is a compare-and-swap on the record's version (workflow-advance.ts), so that two gateway
 * processes settling jobs of one workflow at once each see the other's write, and a job's outcome
 * is recorded, and what it releases released, exactly once.
 *
 * Every job a workflow can ever enqueue (each step, each batch job, each callback) gets its id at
 * creation. An entry is `waiting` (not enqueued), `enqueued` (a job with its id exists, or is
 * being written), or final: `completed`, `failed` (the job was discarded or cancelled), `cancelled`
 * (the workflow was cancelled before it ran) or `skipped` (a batch callback its outcome did not
 * fire). A transition that releases an entry marks it `enqueued` in the same write; the store
 * then enqueues it under its id, which a backend refuses to take twice.
 */
import type { JsonValue } from '../src/job.js';

export type WorkflowType = 'chain' | 'group' | 'batch';
export type WorkflowState = 'running' | 'completed' | 'failed' | 'cancelled';
export type CallbackName = 'on_complete' | 'on_success' | 'on_failure';
export const CALLBACK_NAMES: readonly CallbackName[] = ['on_complete', 'on_success', 'on_failure'];
export type EntryStatus = 'waiting' | 'enqueued' | 'completed' | 'failed' | 'cancelled' | 'skipped';

/**
 * What a workflow enqueues for one of its jobs: a store's `GatewayJobInput` (gateway-store.ts,
 * which names this module's record), kept as JSON; the fields read here.
 */
export interface WorkflowJobInput {
  id?: string;
  type: string;
  extras: { envelope?: Record<string, JsonValue> };
}

/** One job of a workflow: its id, what to enqueue, and how it ended. */
export interface WorkflowEntry {
  job_id: string;
  status: EntryStatus;
  /** The job as its PUSH would enqueue it (its `id` is `job_id`). */
  input: WorkflowJobInput;
  result?: JsonValue;
}

export interface WorkflowRecord {
  id: string;
  type: WorkflowType;
  name: string | null;
  state: WorkflowState;
  created_at: string;
  completed_at?: string;
  cancelled_at?: string;
  /** A chain's steps in order, or a group's or batch's jobs. */
  jobs: WorkflowEntry[];
  /** A batch's callbacks. */
  callbacks: Partial<Record<CallbackName, WorkflowEntry>>;
}

export type JobOutcome = 'completed' | 'failed';

const FINAL: ReadonlySet<EntryStatus> = new Set(['completed', 'failed', 'cancelled', 'skipped']);
export const isFinalEntry = (entry: WorkflowEntry): boolean => FINAL.has(entry.status);
export const isTerminalWorkflow = (record: WorkflowRecord): boolean => record.state !== 'running';
/** Nothing of an ended workflow can still end (a cancelled workflow's running job records its outcome too): its job links can go. */
export const isSettledWorkflow = (record: WorkflowRecord): boolean =>
  isTerminalWorkflow(record) && entriesOf(record).every((entry) => entry.status !== 'enqueued');

/**
 * How long an ended workflow stays readable, from its last write: as long as the gateway's side
 * records of its jobs. Every store drops it then (Redis by expiry, the others by a lazy sweep).
 */
export const WORKFLOW_RETENTION_MS = 7 * 24 * 3600 * 1000;

/** A new workflow's record: a chain's first step, or every job of a group or batch, `enqueued`. */
export function newWorkflowRecord(
  id: string,
  type: WorkflowType,
  name: string | null,
  jobs: readonly WorkflowJobInput[],
  callbacks: Partial<Record<CallbackName, WorkflowJobInput>>,
  now: Date,
): WorkflowRecord {
  const entry = (input: WorkflowJobInput, status: EntryStatus): WorkflowEntry => ({ job_id: input.id!, status, input });
  const record: WorkflowRecord = {
    id,
    type,
    name,
    state: 'running',
    created_at: now.toISOString(),
    jobs: jobs.map((input, index) => entry(input, type !== 'chain' || index === 0 ? 'enqueued' : 'waiting')),
    callbacks: {},
  };
  for (const name of CALLBACK_NAMES) {
    const input = callbacks[name];
    if (input) record.callbacks[name] = entry(input, 'waiting');
  }
  for (const released of record.jobs.filter((e) => e.status === 'enqueued')) withContext(record, released);
  return record;
}

/** Every entry of the record: its jobs, then its callbacks. */
export function entriesOf(record: WorkflowRecord): WorkflowEntry[] {
  return [...record.jobs, ...CALLBACK_NAMES.flatMap((name) => (record.callbacks[name] ? [record.callbacks[name]] : []))];
}

/**
 * Records that job `jobId` ended (`outcome`, with its `result`), and advances the workflow: a
 * chain's next step, or (its last) the chain's end; a chain step's failure fails the chain and
 * cancels the steps after it; a group ends once all its jobs have; a batch whose jobs have all
 * ended releases its callbacks (on_complete always, on_success when none failed, on_failure when
 * one did) and ends once they have. Returns the entries released (now `enqueued`, their input
 * carrying `parent_results`), or null when nothing changed (the job is not one of the record's
 * `enqueued` entries: already recorded, or not released). A cancelled workflow records the
 * outcome and releases nothing.
 */
export function settle(
  record: WorkflowRecord,
  jobId: string,
  outcome: JobOutcome,
  result: JsonValue | undefined,
  now: Date,
): WorkflowEntry[] | null {
  const entry = entriesOf(record).find((candidate) => candidate.job_id === jobId);
  if (!entry || entry.status !== 'enqueued') return null;
  entry.status = outcome;
  if (outcome === 'completed' && result !== undefined) entry.result = result;
  const released: WorkflowEntry[] = [];
  const end = (state: WorkflowState) => {
    record.state = state;
    record.completed_at = now.toISOString();
  };
  const running = record.state === 'running';
  const isCallback = !record.jobs.includes(entry);
  if (record.type === 'chain') {
    const next = record.jobs[record.jobs.indexOf(entry) + 1];
    if (outcome === 'failed') {
      for (const later of record.jobs) if (later.status === 'waiting') later.status = 'cancelled';
      if (running) end('failed');
    } else if (next && running) {
      released.push(next);
    } else if (!next && running) {
      end('completed');
    }
  } else if (!isCallback) {
    if (record.jobs.every(isFinalEntry) && running) {
      const failed = record.jobs.some((job) => job.status === 'failed');
      if (record.type === 'group') end(failed ? 'failed' : 'completed');
      else {
        for (const name of CALLBACK_NAMES) {
          const callback = record.callbacks[name];
          if (!callback) continue;
          const fires = name === 'on_complete' || (name === 'on_success') === !failed;
          if (fires) released.push(callback);
          else callback.status = 'skipped';
        }
        if (released.length === 0) end('completed');
      }
    }
  }
  if (isCallback && running) {
    const callbacks = entriesOf(record).filter((candidate) => !record.jobs.includes(candidate));
    if (callbacks.every(isFinalEntry)) end(callbacks.some((callback) => callback.status === 'failed') ? 'failed' : 'completed');
  }
  for (const next of released) {
    next.status = 'enqueued';
    withContext(record, next);
  }
  return released;
}

/**
 * Cancels a running workflow: entries not yet enqueued are `cancelled`; returns the ids of the
 * enqueued jobs, for the store to cancel (an active one is left to finish: graceful cancellation).
 * Null when the workflow has ended already (a conflict).
 */
export function cancelWorkflow(record: WorkflowRecord, now: Date): string[] | null {
  if (isTerminalWorkflow(record)) return null;
  record.state = 'cancelled';
  record.cancelled_at = now.toISOString();
  const enqueued: string[] = [];
  for (const entry of entriesOf(record)) {
    if (entry.status === 'waiting') entry.status = 'cancelled';
    else if (entry.status === 'enqueued') enqueued.push(entry.job_id);
  }
  return enqueued;
}

/**
 * What a released job is told of its workflow, on its envelope (so every view of the job shows
 * it, and a host's own worker finds it in the job's data too): `workflow_id`, and
 * `parent_results`: a chain step's, the results of the steps before it, by index (ojs-workflows
 * §7.2 keys them by index; an array is that, and `parent_results[0]` reads the same either way);
 * a batch callback's, every job's result by index, null for one that failed (§7.4).
 */
function withContext(record: WorkflowRecord, entry: WorkflowEntry): void {
  const envelope: Record<string, JsonValue> = { ...entry.input.extras.envelope, workflow_id: record.id };
  if (record.type === 'chain') {
    const index = record.jobs.indexOf(entry);
    if (index > 0) envelope.parent_results = record.jobs.slice(0, index).map((step) => step.result ?? null);
  } else if (!record.jobs.includes(entry)) {
    envelope.parent_results = record.jobs.map((job) => job.result ?? null);
  }
  entry.input = { ...entry.input, extras: { ...entry.input.extras, envelope } };
}
