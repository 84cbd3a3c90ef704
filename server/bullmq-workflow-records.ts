/**
 * Workflow records of the BullMQ gateway, shared by every gateway process on the prefix: a hash
 * per workflow, `<prefix>:ojs-gateway:workflow:<id>` (record, version), and one hash linking each
 * of its job ids to it, `<prefix>:ojs-gateway:workflow-jobs`. A write is one script
 * (adapters/bullmq/lua/gateway-workflow-write-1.lua, a compare-and-swap on the version, one key,
 * so a hash-tagged prefix on Redis Cluster needs nothing more). A workflow that ended expires
 * after `WORKFLOW_RETENTION_MS` (workflow-record.ts), and its links are dropped once none of its jobs can still end; the test reset deletes `ojs-gateway:*`.
 */
import type { Redis } from 'ioredis';
import { luaScripts } from '../adapters/bullmq/generated/lua.js';
import type { VersionedWorkflow, WorkflowRecords } from './gateway-store.js';
import { entriesOf, isSettledWorkflow, isTerminalWorkflow, WORKFLOW_RETENTION_MS, type WorkflowRecord } from './workflow-record.js';
const WRITE = ['ojsGatewayWorkflowWrite', luaScripts['gateway-workflow-write']] as const;

type ScriptCall = (...args: (string | number)[]) => Promise<unknown>;

export function createBullmqWorkflowRecords(redis: Redis, prefix: string): WorkflowRecords {
  if (!(WRITE[0] in redis)) redis.defineCommand(WRITE[0], { numberOfKeys: WRITE[1].numberOfKeys, lua: WRITE[1].lua });
  const keyOf = (id: string) => `${prefix}:ojs-gateway:workflow:${id}`;
  const links = `${prefix}:ojs-gateway:workflow-jobs`;
  const read = async (id: string | null): Promise<VersionedWorkflow | null> => {
    if (id === null) return null;
    const [text, version] = await redis.hmget(keyOf(id), 'record', 'version');
    return text && version ? { record: JSON.parse(text) as WorkflowRecord, version: Number(version) } : null;
  };
  return {
    async create(record) {
      // The links first: a link to a record not yet written reads as no workflow.
      await redis.hset(links, Object.fromEntries(entriesOf(record).map((entry) => [entry.job_id, record.id])));
      await redis.hset(keyOf(record.id), { record: JSON.stringify(record), version: '1' });
    },
    read,
    async ofJob(jobId) {
      return read(await redis.hget(links, jobId));
    },
    async write(record, version) {
      const retentionMs = isTerminalWorkflow(record) ? WORKFLOW_RETENTION_MS : 0;
      const call = (redis as unknown as Record<string, ScriptCall>)[WRITE[0]]!;
      const written = Number(await call.call(redis, keyOf(record.id), String(version), JSON.stringify(record), retentionMs)) === 1;
      if (written && isSettledWorkflow(record)) await redis.hdel(links, ...entriesOf(record).map((entry) => entry.job_id));
      return written;
    },
  };
}
