/**
 * Workflow records of the Graphile Worker gateway: the tables `gateway_workflows` (one row per
 * workflow, with its version and, once it ended, its expiry) and `gateway_workflow_jobs` (each
 * job id to its workflow) in the adapter's schema (migration 0001), shared by every gateway
 * process over the database. Each operation is one statement (server/sql/gateway-workflow-*.sql)
 * on the database's clock; a write is a compare-and-swap on the version. An ended workflow reads
 * as absent `WORKFLOW_RETENTION_MS` after its last write; the rows are swept lazily, as the
 * idempotency keys are: at most once a minute a create also deletes a bounded batch of expired
 * workflows, without waiting for it.
 */
import type pg from 'pg';
import type { SchemaNames } from '../adapters/graphile-worker/graphile-worker-sql.js';
import { GatewaySql } from './graphile-worker-gateway-sql.js';
import type { VersionedWorkflow, WorkflowRecords } from './gateway-store.js';
import { entriesOf, isSettledWorkflow, isTerminalWorkflow, WORKFLOW_RETENTION_MS, type WorkflowRecord } from './workflow-record.js';

const SWEEP_EVERY_MS = 60_000;
const SWEEP_ROWS = 1000;

export interface GraphileWorkflowRecords extends WorkflowRecords {
  /** Deletes up to `limit` workflows whose retention passed, now; how many it deleted. */
  sweep(limit?: number): Promise<number>;
  /** Waits for a sweep under way (before the pool ends). */
  close(): Promise<void>;
}

export function createGraphileWorkflowRecords(pool: pg.Pool, schemas: SchemaNames, ready: () => Promise<void>): GraphileWorkflowRecords {
  const run = GatewaySql.for(schemas).runner(pool, ready);
  const versioned = (rows: { version: number; record: WorkflowRecord }[]): VersionedWorkflow | null =>
    rows[0] ? { record: rows[0].record, version: rows[0].version } : null;
  const sweep = async (limit = SWEEP_ROWS) =>
    (await run<{ swept: number }>('gateway-workflow-sweep', [limit], 'sweeping ended workflows'))[0]!.swept;
  let sweptAt = 0;
  let sweeping: Promise<unknown> | null = null;
  const sweepLazily = () => {
    const now = Date.now();
    if (sweeping || now - sweptAt < SWEEP_EVERY_MS) return;
    sweptAt = now;
    sweeping = sweep()
      .catch(() => undefined)
      .finally(() => (sweeping = null));
  };
  return {
    async create(record) {
      const ids = entriesOf(record).map((entry) => entry.job_id);
      await run('gateway-workflow-create', [record.id, JSON.stringify(record), ids], 'creating a workflow');
      sweepLazily();
    },
    async read(id) {
      return versioned(await run('gateway-workflow-read', [id], 'reading a workflow'));
    },
    async ofJob(jobId) {
      return versioned(await run('gateway-workflow-of-job', [jobId], "reading a job's workflow"));
    },
    async write(record, version) {
      const retentionMs = isTerminalWorkflow(record) ? WORKFLOW_RETENTION_MS : null;
      const values = [record.id, version, JSON.stringify(record), retentionMs, isSettledWorkflow(record)];
      return (await run('gateway-workflow-write', values, 'advancing a workflow')).length > 0;
    },
    sweep,
    async close() {
      await sweeping;
    },
  };
}
