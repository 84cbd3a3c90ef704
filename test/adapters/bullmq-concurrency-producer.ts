/**
 * The second process of the BullMQ concurrency test (bullmq-concurrency.test.ts). It opens its
 * own Redis connections and, for each line `<strategy> <round> <count>` on stdin, fires `count`
 * unique adds at once and prints one JSON line with every outcome.
 */
import { createInterface } from 'node:readline';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { withUniqueness } from '../../adapters/bullmq/index.js';
import { clusterOf } from '../conformance/subjects/bullmq.js';
import { burst } from './bullmq-concurrency-burst.js';

// A third argument `host:port,host:port,…` runs on that Redis Cluster instead of REDIS_URL.
const [prefix, connectionsArg, clusterNodes] = process.argv.slice(2);
const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const connections = Array.from({ length: Number(connectionsArg) }, () =>
  clusterNodes ? (clusterOf(clusterNodes.split(',')) as unknown as Redis) : new Redis(url, { maxRetriesPerRequest: null }),
);
const queues = connections.map((connection) => withUniqueness(new Queue('race', { connection, prefix })));

process.stdout.write('ready\n');
for await (const line of createInterface({ input: process.stdin })) {
  if (line === 'exit') break;
  const [strategy, round, count] = line.split(' ');
  process.stdout.write(`${JSON.stringify(await burst(queues, strategy!, Number(round), Number(count)))}\n`);
}
await Promise.all(queues.map((queue) => queue.close()));
await Promise.all(connections.map((connection) => connection.quit()));
