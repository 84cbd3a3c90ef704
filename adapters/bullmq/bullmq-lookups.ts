/**
 * The key lookups BullMQ users know as `getDeduplicationJobId` / `removeDeduplicationKey`, for OJS
 * keys: the job holding a key (`unique-find`) and releasing a key (`unique-release`), shared by
 * `withUniqueness(queue)` and `createBullMQBackend`; the jobs a replace superseded, read from the
 * job that replaced them (`getReplacedJobs`); and, for the wrapped queue's `obliterate`,
 * dropping an obliterated queue's entries from an index it shares with other queues.
 *
 * A key is named by a job as it would be added (its policy computes the key and says which jobs
 * count: states, period) or by the key itself, `{ uniqueness_key }` as job views report it (then
 * a job holds the key while it is not finished: the live states): src/key-lookup.ts, shared
 * with Graphile's (graphile-worker-lookups.ts).
 */
import type { KeyLookup } from '../../src/key-lookup.js';
import { LIVE_STATES, type OjsJobState } from '../../src/job-state.js';
import type { PreparedUnique } from '../../src/unique-enqueue.js';
import { explainUniqueAdd, type ExplainCandidate, type UniqueExplanation } from '../../src/unique-explain.js';
import type { UniquePolicy } from '../../src/unique-policy.js';
import { typedErrorFor, errorForReply } from './bullmq-errors.js';
import { COMMANDS, runScript } from './bullmq-script-set.js';
import { indexKey, layoutArgs, layoutKeyOfIndex, queueBase, queueLayoutKey, type IndexKey } from './bullmq-sidecar-keys.js';
import { decisionArgs, pairs, terminalBits } from './bullmq-enqueue.js';

/** The job holding a key, as `unique-find` read it. */
export interface HeldJob {
  id: string;
  queue: string;
  state: OjsJobState;
  /** The job's hash (the archive's for a cancelled job). */
  hash: Record<string, string>;
}

/**
 * The indexes a lookup reads: a policy's own (the queue's, or the prefix's without the `queue`
 * dimension); for a key alone, which says neither, the prefix's and those of `queueNames`.
 */
export function lookupIndexes(rootPrefix: string, queueNames: readonly string[], lookup: KeyLookup): IndexKey[] {
  if (lookup.policy) return [indexKey(rootPrefix, queueNames[0]!, lookup.policy)];
  const seen = new Map<string, IndexKey>();
  const global = { key: `${rootPrefix}ojs:global:index`, home: '' };
  seen.set(global.key, global);
  for (const name of queueNames) {
    const index = indexKey(rootPrefix, name, { keys: ['queue'] } as unknown as UniquePolicy);
    seen.set(index.key, index);
  }
  return [...seen.values()];
}

/** Live states, no period: what "holds the key" means for a key named alone. */

/**
 * The job holding the key now: the one an add under the lookup's policy would meet as "the
 * existing job" (the oldest it counts), or with no policy the oldest live job under the key; null
 * when none. Each index is read atomically; a read.
 */
export async function findHeldJob(client: object, rootPrefix: string, indexes: IndexKey[], lookup: KeyLookup): Promise<HeldJob | null> {
  const policy: UniquePolicy = lookup.policy ?? ({ on_conflict: 'ignore', states: LIVE_STATES, period: null } as unknown as UniquePolicy);
  const [, , states, years, months, fixedMs] = decisionArgs(policy, lookup.key);
  for (const index of indexes) {
    let reply: unknown;
    try {
      reply = await runScript(client, COMMANDS.uniqueFind, [
        index.key,
        rootPrefix,
        lookup.key,
        states!,
        years!,
        months!,
        fixedMs!,
        lookup.policy ? terminalBits(policy) : 0,
        index.home,
        ...layoutArgs([layoutKeyOfIndex(index.key)]),
      ]);
    } catch (error) {
      throw typedErrorFor(error, { written: false });
    }
    if (!Array.isArray(reply)) throw errorForReply({ code: 'unknown', reply });
    if (reply[0] === 'none') continue;
    if (reply[0] !== 'found') throw errorForReply({ code: 'unknown', reply });
    return { id: String(reply[1]), state: reply[2] as OjsJobState, queue: String(reply[3]), hash: pairs(reply[5]) };
  }
  return null;
}

/**
 * What an add of the prepared job would do now (src/unique-explain.ts): every job recorded under
 * its key in the policy's index, read atomically by `unique-explain`; writes nothing. BullMQ never
 * replaces an active job (capabilities.replace_active is false).
 */
export async function explainKey(
  client: object,
  rootPrefix: string,
  index: IndexKey,
  prepared: PreparedUnique,
): Promise<UniqueExplanation> {
  let reply: unknown;
  try {
    reply = await runScript(client, COMMANDS.uniqueExplain, [
      index.key,
      rootPrefix,
      prepared.key,
      index.home,
      ...layoutArgs([layoutKeyOfIndex(index.key)]),
    ]);
  } catch (error) {
    throw typedErrorFor(error, { written: false });
  }
  if (!Array.isArray(reply) || reply.length !== 2 + 9 * Number(reply[1])) throw errorForReply({ code: 'unknown', reply });
  const candidates: ExplainCandidate[] = [];
  for (let at = 2; at < reply.length; at += 9) {
    const [id, queue, state, created, seq, scheduled, last, superseded, finished] = reply.slice(at, at + 9) as unknown[];
    candidates.push({
      id: String(id),
      queue: String(queue),
      state: state as OjsJobState,
      created_at: Number(created),
      seq: Number(seq),
      scheduled_at: Number(scheduled),
      last_duplicate_at: last === '' || last === null ? null : Number(last),
      finished_at: finished === '' || finished === null ? null : Number(finished),
      superseded: Number(superseded) === 1,
    });
  }
  return explainUniqueAdd({ prepared, now: Number(reply[0]), candidates, canReplaceActive: false });
}

/**
 * Releases the key in each index: every job recorded under it stops counting as its holder, so
 * the next add of the key inserts. The jobs are left as they are (a live one still runs; its view
 * still reports the key). Returns how many jobs stopped holding it. Atomic per index.
 */
export async function releaseKey(client: object, rootPrefix: string, indexes: IndexKey[], key: string): Promise<number> {
  let released = 0;
  for (const index of indexes) {
    let reply: unknown;
    try {
      reply = await runScript(client, COMMANDS.uniqueRelease, [
        index.key,
        rootPrefix,
        key,
        index.home,
        ...layoutArgs([layoutKeyOfIndex(index.key)]),
      ]);
    } catch (error) {
      throw typedErrorFor(error);
    }
    if (!Array.isArray(reply) || reply[0] !== 'released') throw errorForReply({ code: 'unknown', reply });
    released += Number(reply[1]);
  }
  return released;
}

/** Job `id` of queue `queueName` as `get-job` reads it (its archive for a cancelled job); null when gone. */
export async function readJob(client: object, rootPrefix: string, queueName: string, id: string): Promise<HeldJob | null> {
  const base = queueBase(rootPrefix, queueName);
  const reply = (await runScript(client, COMMANDS.getJob, [`${base}${id}`, base, id, ...layoutArgs([queueLayoutKey(base)])])) as unknown[];
  if (reply[0] !== 'found') return null;
  return { id, queue: queueName, state: reply[1] as OjsJobState, hash: pairs(reply[3]) };
}

/**
 * The jobs a `replace` superseded, read from the job that replaced them: the replacer's
 * `ojsReplaced` ("<queue>:<id>" each, includes/ojs-split-member) names them, oldest first, and each
 * is read where it is now, a cancelled one from its archive. One that is gone (an archive past
 * its retention, a finished job BullMQ removed, its id now another job's) is left out; [] for a job that replaced nothing.
 * Each job is read atomically, the list is not.
 */
export async function readReplacedJobs(client: object, rootPrefix: string, queueName: string, id: string): Promise<HeldJob[]> {
  let replacer: HeldJob | null;
  try {
    replacer = await readJob(client, rootPrefix, queueName, id);
    if (!replacer?.hash.ojsReplaced) return [];
    const found: HeldJob[] = [];
    for (const member of JSON.parse(replacer.hash.ojsReplaced) as string[]) {
      const colon = member.indexOf(':');
      const job = await readJob(client, rootPrefix, member.slice(0, colon), member.slice(colon + 1));
      // Under the replacer's key still: an id reused after the job was removed is another job.
      if (job && job.hash.ojsKey === replacer.hash.ojsKey) found.push(job);
    }
    return found;
  } catch (error) {
    throw typedErrorFor(error, { written: false });
  }
}

/** Drops the entries of queue `queueName` from a shared index, step by step. Returns how many. */
export async function dropQueueEntries(client: object, rootPrefix: string, index: IndexKey, queueName: string): Promise<number> {
  let cursor = '0';
  let dropped = 0;
  do {
    const reply = (await runScript(client, COMMANDS.dropQueueEntries, [
      index.key,
      cursor,
      queueName,
      200,
      rootPrefix,
      index.home,
      ...layoutArgs([layoutKeyOfIndex(index.key)]),
    ])) as [string, number];
    cursor = String(reply[0]);
    dropped += Number(reply[1]);
  } while (cursor !== '0');
  return dropped;
}
