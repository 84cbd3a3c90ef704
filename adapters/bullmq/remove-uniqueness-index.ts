/**
 * Explicit cleanup of the adapter's keys for one queue: its fingerprint sets, its fingerprint
 * registry and the archives of its cancelled jobs (`<prefix>:<queue>:ojs:*`). BullMQ's
 * `obliterate` does not remove them. With `{ global: true }` it also removes the cross-queue
 * fingerprint sets (`<prefix>:ojs:global:*`), shared by every queue under the prefix: use it
 * when obliterating all of them.
 *
 * This SCANs, so it is for maintenance, never for the enqueue path (which reclaims lazily).
 * Returns the number of keys deleted.
 */
import type { Queue } from 'bullmq';
import { internalsOf } from './bullmq-unique-add.js';
import { rootPrefixOf, sidecarPatterns } from './bullmq-sidecar-keys.js';

export async function removeUniquenessIndex(queue: Queue, options: { global?: boolean } = {}): Promise<number> {
  const internals = internalsOf(queue);
  const client = (await internals.backend.client) as unknown as {
    scan(cursor: string, match: 'MATCH', pattern: string, count: 'COUNT', n: number): Promise<[string, string[]]>;
    del(...keys: string[]): Promise<number>;
  };
  const patterns = sidecarPatterns(rootPrefixOf(internals), internals.name);
  let deleted = 0;
  for (const pattern of options.global ? [patterns.queue, patterns.global] : [patterns.queue]) {
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
      cursor = next;
      if (keys.length > 0) deleted += await client.del(...keys);
    } while (cursor !== '0');
  }
  return deleted;
}
