/**
 * The BullMQ backend as a conformance subject. Redis from REDIS_URL
 * (default redis://127.0.0.1:6379); a key prefix of its own per subject.
 *
 * Lifecycle steps go through a real BullMQ `Worker` processing jobs manually (`getNextJob`,
 * `moveToCompleted`, `moveToFailed`: BullMQ's documented manual-processing API), so completion,
 * retries with backoff and the final failure are BullMQ's own scripts, never writes to its keys.
 * `makeDue` is `job.promote()`.
 */
import { randomUUID } from 'node:crypto';
import { Job, Worker } from 'bullmq';
import { Cluster, Redis } from 'ioredis';
import { createBullMQBackend, type BullMQBackendOptions } from '../../../adapters/bullmq/index.js';
import type { OjsJob } from '../../../src/index.js';
import type { ConformanceSubject } from '../conformance-subject.js';
import { deleteKeys as deleteKeysMatching } from '../../adapters/bullmq-test-redis.js';

export interface BullMQSubjectOptions {
  /** BullMQ key prefix. (Default: `ojs-test:<random uuid>`.) */
  prefix?: string;
  /** (Default: REDIS_URL, else redis://127.0.0.1:6379.) */
  redisUrl?: string;
  /**
   * Redis Cluster nodes (`host:port`): the backend is then given an ioredis `Cluster`, and
   * `prefix` must be hash-tagged (`{…}`). (Default: none, a single Redis at `redisUrl`.)
   */
  cluster?: string[];
  /** Passed to the backend (BullMQ's backoff between attempts). (Default: the backend's.) */
  backoff?: BullMQBackendOptions['backoff'];
  /** The backend's option; on unless false (the suite's §5 duplicate counts need it). */
  countDuplicates?: boolean;
}

/** A `Cluster` of `host:port` nodes, as a Worker needs its connection (no per-request retry limit). */
export function clusterOf(nodes: string[]): Cluster {
  return new Cluster(
    nodes.map((node) => {
      const [host, port] = node.replace(/^redis:\/\//, '').split(':');
      return { host: host!, port: Number(port) };
    }),
    { redisOptions: { maxRetriesPerRequest: null } },
  );
}

export default async function createSubject(options: BullMQSubjectOptions = {}): Promise<ConformanceSubject> {
  const url = options.redisUrl ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  const prefix = options.prefix ?? `ojs-test:${randomUUID()}`;
  const client = options.cluster ? clusterOf(options.cluster) : new Redis(url, { maxRetriesPerRequest: null });
  const backend = createBullMQBackend({
    connection: client,
    prefix,
    countDuplicates: options.countDuplicates ?? true,
    ...(options.backoff ? { backoff: options.backoff } : {}),
  });
  const deleteKeys = (): Promise<void> => deleteKeysMatching(client, `${prefix}:*`);
  // A failed run keeps its keys for inspection; the next run of the same test (same prefix)
  // starts from nothing rather than from that run's leftovers.
  if (options.prefix !== undefined) await deleteKeys();
  const workers = new Set<Worker>();

  const stateOf = async (id: string): Promise<OjsJob> => {
    const job = await backend.getJob(id);
    if (!job) throw new Error(`no job ${id}`);
    return job;
  };

  return {
    backend,
    clock: null,
    async start(id) {
      const { queue } = await stateOf(id);
      const worker = new Worker(queue, null, { connection: client as Redis, prefix, autorun: false });
      workers.add(worker);
      const token = randomUUID();
      const job = await worker.getNextJob(token, { block: false });
      if (job?.id !== id) throw new Error(`expected the worker to take ${id}, it took ${job?.id ?? 'nothing'}`);
      const finish = async (step: () => Promise<unknown>): Promise<OjsJob> => {
        await step();
        await worker.close();
        workers.delete(worker);
        return stateOf(id);
      };
      return {
        complete: () => finish(() => job.moveToCompleted('done', token, false)),
        fail: (message = 'failed') => finish(() => job.moveToFailed(new Error(message), token, false)),
      };
    },
    async makeDue(id) {
      const { queue } = await stateOf(id);
      const job = await Job.fromId(backend.queue(queue), id);
      if (!job) throw new Error(`no BullMQ job ${id}`);
      await job.promote();
    },
    async close(result) {
      await Promise.all([...workers].map((worker) => worker.close()));
      await backend.close();
      if (result?.passed ?? true) await deleteKeys();
      await client.quit();
    },
  };
}
