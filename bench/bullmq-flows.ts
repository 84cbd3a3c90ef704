/**
 * A flow tree with unique leaves against BullMQ's own FlowProducer.add of the same tree, in the
 * same run: a parent and three children (one plain), sequentially; and a batch of jobs through
 * the backend's `enqueueMany` (one script) against its `enqueue` one by one.
 *
 *   npx tsx bench/bullmq-flows.ts            (BENCH_N trees per round, default 2,000)
 *
 * Median of 3 recorded rounds (after one unrecorded), the methods interleaved in each round, on
 * the shared Redis (REDIS_URL) under a fresh prefix, deleted at the end.
 */
import { randomUUID } from 'node:crypto';
import { FlowProducer, type FlowJob } from 'bullmq';
import { Redis } from 'ioredis';
import { createBullMQBackend, withUniqueness } from '../adapters/bullmq/index.js';
import type { JobInput } from '../src/job.js';
import { unlinkPrefix } from './bullmq-bench-keys.js';

const N = Number(process.env.BENCH_N ?? 2_000);
const BATCH = 20;
const ROUNDS = 3;
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null });
const prefix = `ojs-bench:${randomUUID()}`;
const plain = new FlowProducer({ connection: redis, prefix });
const unique = withUniqueness(new FlowProducer({ connection: redis, prefix }));
const backend = createBullMQBackend({ connection: redis, prefix });

let n = 0;
const tree = (withPolicy: boolean): FlowJob => {
  n += 1;
  const policy = withPolicy ? { unique: { keys: ['type', 'args'] as const, on_conflict: 'ignore' as const } } : {};
  return {
    name: 'report',
    queueName: 'reports',
    data: { n },
    children: [
      { name: 'fetch', queueName: 'fetches', data: { n, part: 1 }, opts: { ...policy } as never },
      { name: 'fetch', queueName: 'fetches', data: { n, part: 2 }, opts: { ...policy } as never },
      { name: 'render', queueName: 'renders', data: { n } },
    ],
  };
};
const jobs = (): JobInput[] =>
  Array.from({ length: BATCH }, (_, i) => ({ type: 'batch', args: { n: ++n, i }, unique: { keys: ['type', 'args'] } }));

const methods: Record<string, () => Promise<unknown>> = {
  'FlowProducer.add (BullMQ)': () => plain.add(tree(false)),
  'unique flow add (2 unique leaves)': () => unique.add(tree(true) as never),
  [`backend.enqueue × ${BATCH}`]: async () => {
    for (const job of jobs()) await backend.enqueue(job);
  },
  [`backend.enqueueMany(${BATCH})`]: () => backend.enqueueMany(jobs()),
};

const perOp: Record<string, number[]> = Object.fromEntries(Object.keys(methods).map((name) => [name, []]));
for (let round = 0; round <= ROUNDS; round++) {
  for (const [name, run] of Object.entries(methods)) {
    const count = name.startsWith('backend') ? Math.max(1, Math.floor(N / BATCH)) : N;
    const start = process.hrtime.bigint();
    for (let i = 0; i < count; i++) await run();
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    if (round > 0) perOp[name]!.push(ms / count);
    process.stdout.write('.');
  }
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const flow = median(perOp['FlowProducer.add (BullMQ)']!);
const singles = median(perOp[`backend.enqueue × ${BATCH}`]!);
console.log(`\n\nBullMQ flows: N=${N} trees per round (a parent, three children), batches of ${BATCH}; median of ${ROUNDS} rounds\n`);
console.log('| method | ms per call | × baseline |');
console.log('|---|---|---|');
for (const [name, values] of Object.entries(perOp)) {
  const base = name.startsWith('backend') ? singles : flow;
  console.log(`| ${name} | ${median(values).toFixed(3)} | ${(median(values) / base).toFixed(2)} |`);
}
await Promise.all([plain.close(), unique.close(), backend.close()]);
await unlinkPrefix(redis, prefix);
await redis.quit();
