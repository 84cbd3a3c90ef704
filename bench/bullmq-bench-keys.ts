/** Shared by the BullMQ benchmarks: removing one run's keys. */
import type { Redis } from 'ioredis';

/** UNLINKs every key under `<prefix>:` (SCAN, never KEYS: the benchmark's Redis may hold 1,000,000 jobs). */
export async function unlinkPrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 10_000);
    cursor = next;
    for (let i = 0; i < keys.length; i += 5000) await redis.unlink(...keys.slice(i, i + 5000));
  } while (cursor !== '0');
}
