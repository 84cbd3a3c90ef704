/**
 * Where the adapter's own keys live. Nothing here hard-codes a prefix: every key is derived from
 * the queue's own key base (`<prefix>:<queue>:`), so BullMQ's hash-tagged prefixes keep working
 * on Redis Cluster.
 *
 * Every sidecar key has at least two segments after the queue's base (`ojs:fp:<key>`,
 * `ojs:cancelled:<id>`): BullMQ's `removeOrphanedJobs` treats a one-segment key under the base
 * as a job id and would delete it.
 *
 * A policy without the `queue` dimension is unique across queues (§3.2), so its fingerprint set
 * cannot belong to one queue: it lives under the root prefix (`<prefix>:ojs:global:…`). On Redis
 * Cluster that needs every queue sharing such a fingerprint in one hash slot, i.e. a hash-tagged
 * prefix (`{app}`) rather than hash-tagged queue names.
 */
import type { UniquePolicy } from '../../src/unique-policy.js';

/** The queue's key base with its trailing colon, e.g. `bull:emails:`. */
export function queueBase(rootPrefix: string, queueName: string): string {
  return `${rootPrefix}${queueName}:`;
}

/** The root prefix with its colon (`bull:`), from a queue's qualified name (`bull:emails`). */
export function rootPrefixOf(queue: { name: string; qualifiedName: string }): string {
  return queue.qualifiedName.slice(0, queue.qualifiedName.length - queue.name.length);
}

export interface FingerprintKeys {
  /** ZSET: member `<queue>:<jobId>`, score the insert's Redis TIME in µs (created_at = score / 1000; the score is the insertion order). */
  set: string;
  /** SET of fingerprint set keys; sampled by the lazy reclaim. */
  registry: string;
}

/**
 * A per-queue fingerprint lives under the base of the queue's name in Unicode NFC: the key is
 * built from the NFC form (§4.2), so `'caf\u00e9'` and `'cafe\u0301'` share a key and must share
 * the set that finds each other's jobs (the members keep the raw queue names, which locate the
 * jobs). Same key, same hash slot whenever the prefix is hash-tagged; a hash-tagged queue name
 * that NFC changes is not in its own queue's slot (docs/bullmq.md, "Redis Cluster").
 */
export function fingerprintKeys(rootPrefix: string, queueName: string, policy: UniquePolicy, uniquenessKey: string): FingerprintKeys {
  if (!policy.keys.includes('queue')) {
    return { set: `${rootPrefix}ojs:global:fp:${uniquenessKey}`, registry: `${rootPrefix}ojs:global:fingerprints` };
  }
  const base = queueBase(rootPrefix, queueName.normalize('NFC'));
  return { set: `${base}ojs:fp:${uniquenessKey}`, registry: `${base}ojs:idx:fingerprints` };
}

/** The archive of a cancelled job (the job hash, renamed). */
export function archiveKey(base: string, jobId: string): string {
  return `${base}ojs:cancelled:${jobId}`;
}

/** A set of the queue names a backend has used, so `getJob(id)` can find jobs enqueued by another process. */
export function queueRegistryKey(rootPrefix: string): string {
  return `${rootPrefix}ojs:global:queues`;
}

/** SCAN patterns matching every sidecar key of one queue, and the cross-queue ones. */
export function sidecarPatterns(rootPrefix: string, queueName: string): { queue: string; global: string } {
  return { queue: `${queueBase(rootPrefix, queueName)}ojs:*`, global: `${rootPrefix}ojs:global:*` };
}
