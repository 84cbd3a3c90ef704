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
 *
 * Each of those two namespaces (a queue's `<base>ojs:`, the prefix's `<prefix>ojs:global:`)
 * records the layout of its sidecar (`ojs:layout`, below), so that builds of two layouts never
 * share one unseen.
 */
import type { UniquePolicy } from '../../src/unique-policy.js';

/**
 * The layout of the sidecar this package reads and writes: the index's encoding, the sidecar key
 * names and the `ojs*` fields on job hashes. Raise it with any change a process of the previous
 * layout would misread (CHANGELOG, docs/bullmq.md "Upgrading"). Every script that reads or writes
 * a namespace of the sidecar compares it with the namespace's layout key first
 * (lua/includes/ojs-layout.lua): the first script that writes a namespace records it, and a
 * process of another layout is refused (`BackendError`, `written: false`) instead of adding duplicates.
 */
export const SIDECAR_LAYOUT_VERSION = 1;

/**
 * The layout check every script that reads or writes the sidecar takes as its last arguments
 * (lua/includes/ojs-layout.lua): this package's layout version, the layout keys of the
 * namespaces the script touches, their count.
 */
export function layoutArgs(layoutKeys: readonly string[]): (string | number)[] {
  return [SIDECAR_LAYOUT_VERSION, ...layoutKeys, layoutKeys.length];
}

/** The layout key of a queue's namespace (`<base>ojs:layout`), in the queue's slot. */
export function queueLayoutKey(base: string): string {
  return `${base}ojs:layout`;
}

/** The layout key of the prefix's cross-queue namespace (`<prefix>ojs:global:layout`), in its slot. */
export function globalLayoutKey(rootPrefix: string): string {
  return `${rootPrefix}ojs:global:layout`;
}

/** The layout key beside an index hash (`indexKey(…).key`, `…ojs:index` or `…ojs:global:index`): its namespace's. */
export function layoutKeyOfIndex(index: string): string {
  return `${index.slice(0, index.length - 'index'.length)}layout`;
}

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
