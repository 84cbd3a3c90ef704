/**
 * Adds without `unique` through `withUniqueness(queue)` leave byte-identical Redis state to the
 * same adds on an unwrapped queue: same ids, same keys, same hashes, same events (stream entry
 * ids aside, which are times), and no key of the adapter's own.
 */
import { Queue } from 'bullmq';
import { expect } from 'chai';
import type { Redis } from 'ioredis';
import { withUniqueness } from '../../adapters/bullmq/index.js';
import { useRedisPrefix } from './bullmq-test-redis.js';

/** Every key under `prefix`, with its type and a canonical dump of its value, the prefix cut off. */
async function snapshot(redis: Redis, prefix: string): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for (const key of (await redis.keys(`${prefix}:*`)).sort()) {
    const type = await redis.type(key);
    let value: unknown;
    if (type === 'string') value = await redis.getBuffer(key).then((b) => b?.toString('base64'));
    else if (type === 'hash') value = await redis.hgetall(key);
    else if (type === 'list') value = await redis.lrange(key, 0, -1);
    else if (type === 'set') value = (await redis.smembers(key)).sort();
    else if (type === 'zset') value = await redis.zrange(key, '0', '-1', 'WITHSCORES');
    else if (type === 'stream') value = ((await redis.call('XRANGE', key, '-', '+')) as [string, string[]][]).map(([, fields]) => fields);
    out[`${type} ${key.slice(prefix.length)}`] = value;
  }
  return out;
}

async function plainAdds(queue: Pick<Queue, 'add' | 'addBulk'>): Promise<(string | undefined)[]> {
  const timestamp = 1_700_000_000_000;
  const ids = [
    (await queue.add('a', { x: 1 }, { timestamp })).id,
    (await queue.add('b', { y: [1, 2] }, { timestamp, delay: 5_000 })).id,
    (await queue.add('c', {}, { timestamp, priority: 3, attempts: 4, backoff: { type: 'fixed', delay: 10 } })).id,
    (await queue.add('d', 'str', { timestamp, jobId: 'custom-1', removeOnComplete: true })).id,
    (await queue.add('d', 'again', { timestamp, jobId: 'custom-1' })).id,
    (await queue.add('e', {}, { timestamp, deduplication: { id: 'dd' } })).id,
    (await queue.add('e', {}, { timestamp, deduplication: { id: 'dd' } })).id,
    (await queue.add('f', {}, { timestamp, lifo: true })).id,
  ];
  const bulk = await queue.addBulk([
    { name: 'g', data: { n: 1 }, opts: { timestamp } },
    { name: 'g', data: { n: 2 }, opts: { timestamp, delay: 1_000 } },
  ]);
  return [...ids, ...bulk.map((job) => job.id)];
}

describe('bullmq adapter: adds without unique are plain BullMQ adds', function () {
  const ctx = useRedisPrefix('bullmq-plain-add.test.ts');

  it('byte-identical Redis state, ids and events to an unwrapped queue, and no adapter keys', async function () {
    const plainIds = await plainAdds(ctx.queue('q', { prefix: `${ctx.prefix}:plain` }));
    const wrapped = withUniqueness(ctx.queue('q', { prefix: `${ctx.prefix}:wrapped` }));
    const wrappedIds = await plainAdds(wrapped);
    expect(wrappedIds).to.deep.equal(plainIds);
    const plain = await snapshot(ctx.redis, `${ctx.prefix}:plain`);
    const viaWrapper = await snapshot(ctx.redis, `${ctx.prefix}:wrapped`);
    expect(Object.keys(plain)).to.have.length.greaterThan(8);
    expect(viaWrapper).to.deep.equal(plain);
    expect(Object.keys(viaWrapper).filter((key) => key.includes('ojs'))).to.deep.equal([]);
  });
});
