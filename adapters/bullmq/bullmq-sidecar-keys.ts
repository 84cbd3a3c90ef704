/**
 * Where the adapter's own keys live. Nothing here hard-codes a prefix: every key is derived from
 * the queue's own key base (`<prefix>:<queue>:`), so BullMQ's hash-tagged prefixes keep working
 * on Redis Cluster.
 *
 * Every sidecar key has at least two segments after the queue's base (`ojs:index`,
 * `ojs:cancelled:<id>`): BullMQ's `removeOrphanedJobs` treats a one-segment key under the base
 * as a job id and would delete it.
 *
 * A policy without the `queue` dimension is unique across queues (§3.2), so its index entries
 * cannot belong to one queue: it lives under the root prefix (`<prefix>:ojs:global:…`). On Redis
 * Cluster that needs every queue whose jobs share such a key in one hash slot, i.e. a hash-tagged
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

export interface IndexKey {
  /** The hash listing the key's jobs (lua/includes/ojs-index.lua): field = the key's first 32 hex digits. */
  key: string;
  /** Its home queue, whose name its entries omit: the queue's NFC name, '' for the prefix's index. */
  home: string;
}

/**
 * The index a policy's keys are listed in. A per-queue index lives under the base of the queue's
 * name in Unicode NFC: the key is built from the NFC form (§4.2), so `'caf\u00e9'` and
 * `'cafe\u0301'` share a key and must share the index that finds each other's jobs (the entries
 * keep the raw queue names, which locate the jobs). Same key, same hash slot whenever the prefix
 * is hash-tagged; a hash-tagged queue name that NFC changes is not in its own queue's slot
 * (docs/bullmq.md, "Redis Cluster").
 */
export function indexKey(rootPrefix: string, queueName: string, policy: Pick<UniquePolicy, 'keys'>): IndexKey {
  if (!policy.keys.includes('queue')) return { key: `${rootPrefix}ojs:global:index`, home: '' };
  const home = queueName.normalize('NFC');
  return { key: `${queueBase(rootPrefix, home)}ojs:index`, home };
}

/** The archive of a cancelled job (the job hash, renamed). */
export function archiveKey(base: string, jobId: string): string {
  return `${base}ojs:cancelled:${jobId}`;
}

/** A set of the queue names a backend has used, so `getJob(id)` can find jobs enqueued by another process. */
export function queueRegistryKey(rootPrefix: string): string {
  return `${rootPrefix}ojs:global:queues`;
}

/**
 * `text` as a literal in a SCAN MATCH pattern: BullMQ refuses only `:` in queue names, so a queue
 * named `a*` must not match queue `ab`'s keys.
 */
export function globLiteral(text: string): string {
  return text.replace(/[*?[\]\\]/g, (char) => `\\${char}`);
}

/** SCAN patterns matching every sidecar key of one queue, and the cross-queue ones. */
export function sidecarPatterns(rootPrefix: string, queueName: string): { queue: string; global: string } {
  return { queue: `${globLiteral(queueBase(rootPrefix, queueName))}ojs:*`, global: `${globLiteral(rootPrefix)}ojs:global:*` };
}
