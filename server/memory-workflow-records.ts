/**
 * Workflow records of the memory gateway: a map in the process (the memory backend has no other
 * place), each record kept as JSON text with its version, so that a reader's copy is its own and
 * a write names the version it read, as on the other backends.
 */
import type { VersionedWorkflow, WorkflowRecords } from './gateway-store.js';
import { entriesOf, type WorkflowRecord } from './workflow-record.js';

export interface MemoryWorkflowRecords extends WorkflowRecords {
  clear(): void;
}

export function createMemoryWorkflowRecords(): MemoryWorkflowRecords {
  const records = new Map<string, { text: string; version: number }>();
  const byJob = new Map<string, string>();
  const read = (id: string | undefined): VersionedWorkflow | null => {
    const stored = id === undefined ? undefined : records.get(id);
    return stored ? { record: JSON.parse(stored.text) as WorkflowRecord, version: stored.version } : null;
  };
  return {
    async create(record) {
      records.set(record.id, { text: JSON.stringify(record), version: 1 });
      for (const entry of entriesOf(record)) byJob.set(entry.job_id, record.id);
    },
    async read(id) {
      return read(id);
    },
    async ofJob(jobId) {
      return read(byJob.get(jobId));
    },
    async write(record, version) {
      const stored = records.get(record.id);
      if (!stored || stored.version !== version) return false;
      records.set(record.id, { text: JSON.stringify(record), version: version + 1 });
      return true;
    },
    clear() {
      records.clear();
      byJob.clear();
    },
  };
}
