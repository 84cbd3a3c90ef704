/**
 * Workflow records of the Graphile Worker gateway: the tables `gateway_workflows` (one row per
 * workflow, with its version) and `gateway_workflow_jobs` (each job id to its workflow) in the
 * adapter's schema (migration 0001), shared by every gateway process over the database. Each
 * operation is one statement (server/sql/gateway-workflow-*.sql); a write is a
 * compare-and-swap on the version. The rows stay until the schema's rows are deleted: nothing
 * sweeps an ended workflow yet.
 */
import type pg from 'pg';
import type { SchemaNames } from '../adapters/graphile-worker/graphile-worker-sql.js';
import { GatewaySql } from './graphile-worker-gateway-sql.js';
import type { VersionedWorkflow, WorkflowRecords } from './gateway-store.js';
import { entriesOf, type WorkflowRecord } from './workflow-record.js';

export function createGraphileWorkflowRecords(pool: pg.Pool, schemas: SchemaNames, ready: () => Promise<void>): WorkflowRecords {
  const run = GatewaySql.for(schemas).runner(pool, ready);
  const versioned = (rows: { version: number; record: WorkflowRecord }[]): VersionedWorkflow | null =>
    rows[0] ? { record: rows[0].record, version: rows[0].version } : null;
  return {
    async create(record) {
      const ids = entriesOf(record).map((entry) => entry.job_id);
      await run('gateway-workflow-create', [record.id, JSON.stringify(record), ids], 'creating a workflow');
    },
    async read(id) {
      return versioned(await run('gateway-workflow-read', [id], 'reading a workflow'));
    },
    async ofJob(jobId) {
      return versioned(await run('gateway-workflow-of-job', [jobId], "reading a job's workflow"));
    },
    async write(record, version) {
      return (await run('gateway-workflow-write', [record.id, version, JSON.stringify(record)], 'advancing a workflow')).length > 0;
    },
  };
}
