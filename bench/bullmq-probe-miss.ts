/**
 * What a wrong guess of the duplicate probe costs (docs/bullmq.md, "The duplicate probe"): an add
 * whose fingerprint the queue saw holding a job, but the job is gone, so the probe misses and the
 * full unique-add inserts. Measured against the same add on a queue with `duplicateProbe: false`,
 * interleaved, sequential; each add is followed by removing the job it created (same work on both
 * sides, not timed), so every measured add is a probe miss on the probing queue.
 *
 *   npx tsx bench/bullmq-probe-miss.ts        (BENCH_N adds per side per round, default 2000)
 */
import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { withUniqueness, type UniqueQueue } from '../adapters/bullmq/index.js';
import { unlinkPrefix } from './bullmq-bench-keys.js';

const N = Number(process.env.BENCH_N ?? 2000);
const ROUNDS = 5;
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null });
const prefix = `ojs-bench:${randomUUID()}`;
const sides: Record<string, UniqueQueue> = {
  'probe on (miss, then the full add)': withUniqueness(new Queue('miss-on', { connection: redis, prefix })),
  'probe off (the full add)': withUniqueness(new Queue('miss-off', { connection: redis, prefix }), { duplicateProbe: false }),
};
const unique = { keys: ['type', 'queue'] } as const;

const medians = new Map<string, number[]>();
for (let round = 0; round < ROUNDS + 1; round++) {
  for (const [name, queue] of Object.entries(sides)) {
    const latencies: number[] = [];
    for (let i = 0; i < N; i++) {
      const start = process.hrtime.bigint();
      const job = await queue.add('sync', { i }, { unique });
      latencies.push(Number(process.hrtime.bigint() - start) / 1e6);
      if (job.unique?.outcome !== 'created') throw new Error(`expected an insert, got ${job.unique?.outcome}`);
      await job.remove();
    }
    latencies.sort((a, b) => a - b);
    if (round > 0) medians.set(name, [...(medians.get(name) ?? []), latencies[Math.floor(N / 2)]!]);
  }
}
console.log(`Probe miss: sequential add latency, median of ${ROUNDS} rounds of ${N} (each round's median), Redis and Node on one machine`);
console.log('| side | median ms |');
console.log('|---|---|');
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
for (const [name, values] of medians) console.log(`| ${name} | ${median(values).toFixed(3)} |`);
const [on, off] = [...medians.values()].map(median) as [number, number];
console.log(`| extra per miss | ${(on - off).toFixed(3)} (${(on / off).toFixed(2)}×) |`);
for (const queue of Object.values(sides)) await queue.close();
await unlinkPrefix(redis, prefix);
await redis.quit();
