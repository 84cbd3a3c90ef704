/**
 * A handle per BullMQ `Queue` object: what every operation on that queue needs, worked out once,
 * on first use, and held beside the queue (never on it). The rest of the adapter reaches the
 * queue's internals through it: its keys in unique-add's order and in RESP, its prefix and base,
 * the index of each kind of policy, the layout checks, the probe hints, its client, its default
 * policy, its registration in the prefix's queue set. A queue's name, prefix and keys never
 * change, so neither does its handle.
 */
import type { Queue } from 'bullmq';
import type { UniquePolicyInput } from '../../src/unique-policy.js';
import { internalsOf, queueClient, writeQueueMeta, type QueueInternals } from './bullmq-host.js';
import { ProbeHints } from './bullmq-probe-hints.js';
import { encodedArguments, SCRIPT_HEAD, type EncodedArguments } from './bullmq-script-command.js';
import {
  UNIQUE_ADD_ARGV,
  UNIQUE_ADD_ARGV_COUNT,
  UNIQUE_NATIVE_ADD_ARGV_COUNT,
  UNIQUE_ADD_QUEUE_KEYS,
  UNIQUE_PROBE_ARGV,
  UNIQUE_PROBE_ARGV_COUNT,
} from './bullmq-script-set.js';
import {
  globalLayoutKey,
  indexKey,
  layoutArgs,
  layoutKeyOfIndex,
  queueBase,
  queueRegistryKey,
  rootPrefixOf,
  type IndexKey,
} from './bullmq-sidecar-keys.js';

/** The layout keys of the namespaces an add touches, and their check as the scripts' last arguments (`layoutArgs`). */
export interface QueueLayout {
  keys: readonly string[];
  args: readonly (string | number)[];
  /** `args` in RESP where unique-add, unique-probe and unique-native-add have them, after their ARGV. */
  encoded: EncodedArguments;
  encodedForProbe: EncodedArguments;
  encodedForNative: EncodedArguments;
}

export interface QueueHandle {
  readonly queue: Queue;
  /** BullMQ's members outside its public API (bullmq-host.ts). */
  readonly internals: QueueInternals;
  readonly name: string;
  /** The root key prefix with its colon ("bull:"). */
  readonly rootPrefix: string;
  /** The queue's key base ("bull:emails:"). */
  readonly base: string;
  /** unique-add's KEYS[1..11]. */
  readonly queueKeys: readonly string[];
  /** The index of policies with `queue` (this queue's) and without it (the prefix's). */
  readonly queueIndex: IndexKey;
  readonly prefixIndex: IndexKey;
  /** unique-add's KEYS in RESP, with the queue's index as KEYS[12], the prefix's, or the meta key (no policy). */
  readonly encodedKeys: { queue: EncodedArguments; prefix: EncodedArguments; meta: EncodedArguments };
  /** unique-add's ARGV[4..5] (root prefix, queue name) in RESP. */
  readonly encodedNames: EncodedArguments;
  /** unique-probe's KEYS and ARGV[1..3] (root prefix, queue name, base) in RESP, with the queue's index or the prefix's. */
  readonly encodedProbeHead: { queue: EncodedArguments; prefix: EncodedArguments };
  /** The layout check of the queue index's namespace, the prefix's, and both. */
  readonly queueLayout: QueueLayout;
  readonly prefixLayout: QueueLayout;
  readonly bothLayouts: QueueLayout;
  /** The fingerprints this queue's adds saw holding a job (bullmq-probe-hints.ts). */
  readonly hints: ProbeHints;
  /** The queue's `defaultJobOptions.unique`, read at each call (BullMQ lets it change). */
  defaultPolicy(): UniquePolicyInput | null | undefined;
  /** The queue's ioredis client, once connected. */
  client(): ReturnType<typeof queueClient>;
  /** The client `client()` resolved to, once it has: the hot path then skips an await. */
  readonly readyClient: Awaited<ReturnType<typeof queueClient>> | undefined;
  /** Whether the queue is in the prefix's queue set (`register` succeeded): the hot path then skips an await (a microtask per add). */
  readonly registered: boolean;
  /**
   * Records the queue's name in its prefix's queue set, so that the backend's `getJob(id)`, its
   * id claims and lookups find this queue's jobs; `writeMeta` also writes BullMQ's meta hash (for
   * the library's own queues, opened with `skipMetasUpdate`). Called after an add that wrote,
   * never before: a refused or failed add leaves no trace. A separate command (the set is
   * prefix-wide, outside a hash-tagged queue's slot); the add has already succeeded, so a
   * failure here is not the add's: it is tried again after the next add that writes.
   */
  register(options?: { writeMeta?: boolean }): Promise<void>;
}

const handles = new WeakMap<Queue, QueueHandle>();

export function queueHandle(queue: Queue): QueueHandle {
  let handle = handles.get(queue);
  if (handle === undefined) {
    const internals = internalsOf(queue);
    const rootPrefix = rootPrefixOf(internals);
    const queueIndex = indexKey(rootPrefix, internals.name, { keys: ['queue'] });
    const prefixIndex = indexKey(rootPrefix, internals.name, { keys: [] });
    const queueLayoutKey = layoutKeyOfIndex(queueIndex.key);
    const queueKeys = UNIQUE_ADD_QUEUE_KEYS.map((name) => internals.keys[name]!);
    // Apart from `registered`: a queue of the backend wrapped by withUniqueness may be registered
    // by the wrapper (no meta) before the backend's first add asks for its meta hash.
    let metaWritten = false;
    handle = {
      queue,
      internals,
      name: internals.name,
      rootPrefix,
      base: queueBase(rootPrefix, internals.name),
      queueKeys,
      queueIndex,
      prefixIndex,
      encodedKeys: {
        queue: encodedArguments(SCRIPT_HEAD, [...queueKeys, queueIndex.key]),
        prefix: encodedArguments(SCRIPT_HEAD, [...queueKeys, prefixIndex.key]),
        meta: encodedArguments(SCRIPT_HEAD, [...queueKeys, internals.keys.meta!]),
      },
      encodedNames: encodedArguments(UNIQUE_ADD_ARGV + 3, [rootPrefix, internals.name]),
      encodedProbeHead: {
        queue: probeHead(SCRIPT_HEAD, queueIndex.key, internals, rootPrefix),
        prefix: probeHead(SCRIPT_HEAD, prefixIndex.key, internals, rootPrefix),
      },
      queueLayout: layout([queueLayoutKey]),
      prefixLayout: layout([globalLayoutKey(rootPrefix)]),
      bothLayouts: layout([queueLayoutKey, globalLayoutKey(rootPrefix)]),
      hints: new ProbeHints(),
      defaultPolicy: () => (internals.jobsOpts as { unique?: UniquePolicyInput | null }).unique,
      client() {
        return queueClient(queue).then((client) => ((this as { readyClient: unknown }).readyClient = client));
      },
      readyClient: undefined,
      registered: false,
      async register(options) {
        const writeMeta = options?.writeMeta === true && !metaWritten;
        if (this.registered && !writeMeta) return;
        try {
          const client = (await queueClient(queue)) as unknown as { sadd(key: string, member: string): Promise<number> };
          const joined = client.sadd(queueRegistryKey(rootPrefix), internals.name);
          await (writeMeta ? Promise.all([joined, writeQueueMeta(queue)]) : joined);
          (this as { registered: boolean }).registered = true;
          if (writeMeta) metaWritten = true;
        } catch {
          // Not registered yet; the next add that writes tries again.
        }
      },
    };
    handles.set(queue, handle);
  }
  return handle;
}

function layout(keys: string[]): QueueLayout {
  const args = layoutArgs(keys);
  return {
    keys,
    args,
    encoded: encodedArguments(UNIQUE_ADD_ARGV + UNIQUE_ADD_ARGV_COUNT, args),
    encodedForProbe: encodedArguments(UNIQUE_PROBE_ARGV + UNIQUE_PROBE_ARGV_COUNT, args),
    encodedForNative: encodedArguments(UNIQUE_ADD_ARGV + UNIQUE_NATIVE_ADD_ARGV_COUNT, args),
  };
}

/** unique-probe's KEYS (index, events, meta) and ARGV[1..3], in RESP. */
function probeHead(at: number, index: string, internals: QueueInternals, rootPrefix: string): EncodedArguments {
  return encodedArguments(at, [
    index,
    internals.keys.events!,
    internals.keys.meta!,
    rootPrefix,
    internals.name,
    queueBase(rootPrefix, internals.name),
  ]);
}
