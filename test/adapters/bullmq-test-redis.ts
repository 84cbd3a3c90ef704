/**
 * Per-test Redis isolation for the BullMQ adapter tests: each test gets the key prefix
 * `ojs-test:<run salt>:<sha1(file + title)>` and its own connection. Keys are deleted after a passing test
 * (and before each run, in case an earlier failed run left them); a failed test keeps its keys
 * for inspection.
 */
import { createHash } from 'node:crypto';
import { Queue, type QueueOptions } from 'bullmq';
import { Cluster, Redis } from 'ioredis';
import { RUN_SALT } from '../run-salt.js';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
/** The Redis Cluster of the Cluster tests (`host:port` of each node; empty: none). */
export const CLUSTER_NODES = (process.env.REDIS_CLUSTER_NODES ?? '127.0.0.1:7101,127.0.0.1:7102,127.0.0.1:7103').split(',').filter(Boolean);

export interface RedisTestContext {
  readonly redis: Redis;
  readonly prefix: string;
  /** Extra connections made with `connect()`, closed after the test. */
  connect(): Redis;
  /** A BullMQ queue under the test's prefix on the test's connection, closed after the test. */
  queue(name: string, options?: Partial<QueueOptions>): Queue;
  /** Registers something to close after the test (workers, queue events …), before the connections. */
  closeLater(closable: { close(): Promise<unknown> }): void;
}

/** The server's clock (Redis TIME) in milliseconds: tests compare server times with server times, never with the producer's clock. */
export async function redisTimeMs(redis: Redis): Promise<number> {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}

/** Deletes the keys matching `pattern`; on a Redis Cluster on every master, key by key (keys of several slots). */
export async function deleteKeys(redis: Redis | Cluster, pattern: string): Promise<void> {
  const cluster = redis instanceof Cluster;
  for (const node of cluster ? redis.nodes('master') : [redis]) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0 && !cluster) await node.del(...keys);
      else if (keys.length > 0) await Promise.all(keys.map((key) => node.del(key)));
    } while (cursor !== '0');
  }
}

/**
 * `url` (read when each test starts) points the context at another Redis, e.g. a redis-server the
 * file started itself with `startOwnRedis` for a test that needs MONITOR, which is never sent to
 * the shared Redis.
 */
export function useRedisPrefix(file: string, url: () => string = () => REDIS_URL): RedisTestContext {
  let redis: Redis | undefined;
  let prefix: string | undefined;
  const extra: Redis[] = [];
  const closables: { close(): Promise<unknown> }[] = [];
  beforeEach(async function () {
    prefix = `ojs-test:${RUN_SALT}:${createHash('sha1').update(`${file}\0${this.currentTest!.fullTitle()}`).digest('hex')}`;
    redis = new Redis(url(), { maxRetriesPerRequest: null });
    await deleteKeys(redis, `${prefix}:*`);
  });
  afterEach(async function () {
    await Promise.all(closables.splice(0).map((closable) => closable.close()));
    if (this.currentTest?.state === 'passed') await deleteKeys(redis!, `${prefix}:*`);
    await Promise.all(extra.splice(0).map((client) => client.quit()));
    await redis!.quit();
  });
  return {
    get redis() {
      return redis!;
    },
    get prefix() {
      return prefix!;
    },
    connect() {
      const client = new Redis(url(), { maxRetriesPerRequest: null });
      extra.push(client);
      return client;
    },
    queue(name, options = {}) {
      const queue = new Queue(name, { connection: redis!, prefix: prefix!, ...options });
      closables.push(queue);
      return queue;
    },
    closeLater(closable) {
      closables.push(closable);
    },
  };
}

/** One job of an index field (adapters/bullmq/lua/includes/ojs-index.lua); `queue` is '' for the index's home queue. */
export interface IndexEntry {
  us: number;
  queue: string;
  id: string;
  bits: number;
  periodEnd: number;
}

/**
 * Every field of an index hash (`<prefix>:<queue>:ojs:index` or `<prefix>:ojs:global:index`) with
 * its entries, unpacked by Redis' own cmsgpack as the scripts do.
 */
export async function readIndex(redis: Redis, indexKey: string): Promise<Map<string, IndexEntry[]>> {
  const flat = (await redis.eval(
    "local all = redis.call('HGETALL', KEYS[1]) for i = 2, #all, 2 do all[i] = cmsgpack.unpack(all[i]) end return all",
    1,
    indexKey,
  )) as (string | (string | number)[])[];
  const out = new Map<string, IndexEntry[]>();
  for (let i = 0; i < flat.length; i += 2) {
    const values = flat[i + 1] as (string | number)[];
    const entries: IndexEntry[] = [];
    for (let j = 0; j < values.length; j += 5)
      entries.push({
        us: Number(values[j]),
        queue: String(values[j + 1]),
        id: String(values[j + 2]),
        bits: Number(values[j + 3]),
        periodEnd: Number(values[j + 4]),
      });
    out.set(String(flat[i]), entries);
  }
  return out;
}

/** The index entries of one uniqueness key (its field is the key's first 32 hex digits). */
export async function indexEntries(redis: Redis, indexKey: string, uniquenessKey: string): Promise<IndexEntry[]> {
  return (await readIndex(redis, indexKey)).get(uniquenessKey.slice(0, 32)) ?? [];
}
