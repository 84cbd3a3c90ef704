/**
 * Explicit cleanup of the adapter's keys for one queue: its index hash and the archives of its
 * cancelled jobs (`<prefix>:<queue>:ojs:*`). BullMQ's `obliterate` does not remove them. With
 * `{ global: true }` it also removes the cross-queue index and queue set (`<prefix>:ojs:global:*`),
 * shared by every queue under the prefix: use it when obliterating all of them.
 *
 * This SCANs, so it is for maintenance, never for the enqueue path (which reclaims lazily). On a
 * Redis Cluster it scans every master (a SCAN sees one node's keys only) and deletes key by key
 * (keys of different slots cannot share a DEL). Returns the number of keys deleted.
 */
import type { Queue } from 'bullmq';
import { backendErrorFor } from './bullmq-errors.js';
import { queueHandle } from './bullmq-queue-handle.js';
import { sidecarPatterns } from './bullmq-sidecar-keys.js';

interface ScanClient {
  scan(cursor: string, match: 'MATCH', pattern: string, count: 'COUNT', n: number): Promise<[string, string[]]>;
  del(...keys: string[]): Promise<number>;
  pipeline(): { del(key: string): unknown; exec(): Promise<[Error | null, unknown][] | null> };
}

interface MaybeCluster {
  isCluster?: boolean;
  nodes?(role: 'master'): ScanClient[];
}

export async function removeUniquenessIndex(queue: Queue, options: { global?: boolean } = {}): Promise<number> {
  const handle = queueHandle(queue);
  const patterns = sidecarPatterns(handle.rootPrefix, handle.name);
  return deleteMatching(queue, options.global ? [patterns.queue, patterns.global] : [patterns.queue]);
}

/** Deletes every key matching one of `patterns`, on every master. Returns the number deleted. */
export async function deleteMatching(queue: Queue, patterns: string[]): Promise<number> {
  try {
    const client = (await queueHandle(queue).internals.backend.client) as unknown as ScanClient & MaybeCluster;
    const cluster = client.isCluster === true && typeof client.nodes === 'function';
    const nodes = cluster ? client.nodes!('master') : [client];
    let deleted = 0;
    for (const node of nodes) {
      for (const pattern of patterns) {
        let cursor = '0';
        do {
          const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
          cursor = next;
          if (keys.length === 0) continue;
          if (!cluster) {
            deleted += await node.del(...keys);
            continue;
          }
          const pipeline = node.pipeline();
          for (const key of keys) pipeline.del(key);
          for (const [error, count] of (await pipeline.exec()) ?? []) {
            if (error) throw error;
            deleted += Number(count);
          }
        } while (cursor !== '0');
      }
    }
    return deleted;
  } catch (error) {
    throw backendErrorFor(error);
  }
}
