/**
 * Workflow records of the memory gateway: a map in the process (the memory backend has no other
 * place), each record kept as JSON text with its version, so that a reader's copy is its own and
 * a write names the version it read, as on the other backends. An ended workflow is dropped
 * `WORKFLOW_RETENTION_MS` after its last write, by the store's clock: read as absent from then,
 * swept from the map at most once a minute beside a create.
 */
import type { VersionedWorkflow, WorkflowRecords } from './gateway-store.js';
import { entriesOf, isSettledWorkflow, isTerminalWorkflow, WORKFLOW_RETENTION_MS, type WorkflowRecord } from './workflow-record.js';

const SWEEP_EVERY_MS = 60_000;

export interface MemoryWorkflowRecords extends WorkflowRecords {
  clear(): void;
}

interface Stored {
  text: string;
  version: number;
  /** Epoch ms after which an ended workflow is gone; Infinity while it runs. */
  expiresAt: number;
}

/** `clock`: the store's (epoch ms), so that a test moving it moves the retention too. */
export function createMemoryWorkflowRecords(clock: { now(): number } = { now: () => Date.now() }): MemoryWorkflowRecords {
  const records = new Map<string, Stored>();
  const byJob = new Map<string, string>();
  let sweptAt = clock.now();
  const drop = (id: string, stored: Stored) => {
    records.delete(id);
    for (const entry of entriesOf(JSON.parse(stored.text) as WorkflowRecord)) {
      if (byJob.get(entry.job_id) === id) byJob.delete(entry.job_id);
    }
  };
  const live = (id: string | undefined): Stored | undefined => {
    const stored = id === undefined ? undefined : records.get(id);
    if (!stored || stored.expiresAt > clock.now()) return stored;
    drop(id!, stored);
    return undefined;
  };
  const read = (id: string | undefined): VersionedWorkflow | null => {
    const stored = live(id);
    return stored ? { record: JSON.parse(stored.text) as WorkflowRecord, version: stored.version } : null;
  };
  const sweep = (now: number) => {
    if (now - sweptAt < SWEEP_EVERY_MS) return;
    sweptAt = now;
    for (const [id, stored] of records) if (stored.expiresAt <= now) drop(id, stored);
  };
  return {
    async create(record) {
      sweep(clock.now());
      records.set(record.id, { text: JSON.stringify(record), version: 1, expiresAt: Infinity });
      for (const entry of entriesOf(record)) byJob.set(entry.job_id, record.id);
    },
    async read(id) {
      return read(id);
    },
    async ofJob(jobId) {
      return read(byJob.get(jobId));
    },
    async write(record, version) {
      const stored = live(record.id);
      if (!stored || stored.version !== version) return false;
      const expiresAt = isTerminalWorkflow(record) ? clock.now() + WORKFLOW_RETENTION_MS : Infinity;
      records.set(record.id, { text: JSON.stringify(record), version: version + 1, expiresAt });
      if (isSettledWorkflow(record))
        for (const entry of entriesOf(record)) if (byJob.get(entry.job_id) === record.id) byJob.delete(entry.job_id);
      return true;
    },
    clear() {
      records.clear();
      byJob.clear();
    },
  };
}
