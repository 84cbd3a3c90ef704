/**
 * Work per replace against a key's history, on every backend: BENCH_REPLACES (default 2,000)
 * single `replace` adds of one key under a policy that counts `cancelled`, then one batch of
 * BENCH_BATCH (default 1,000) such jobs. Not a test: read the ratios, not the absolute figures.
 *
 *   npm run bench:replace-history      # REDIS_URL, DATABASE_URL as the tests use them
 *
 * For each backend it prints:
 * - the median latency of the first 100 adds after the first, and of the last 100, and their
 *   ratio (1.0: the n-th add costs what the 2nd did, whatever came before it);
 * - how many jobs the last single add superseded (1: only the live job before it);
 * - the batch's time per job over the first adds' median (the same ratio, inside one script or
 *   one transaction).
 * Its own key prefix and schemas, deleted at the end.
 */
import { randomUUID } from 'node:crypto';
import { userInfo } from 'node:os';
import { Redis } from 'ioredis';
import pg from 'pg';
import { createBullMQBackend } from '../adapters/bullmq/index.js';
import { createGraphileWorkerBackend } from '../adapters/graphile-worker/index.js';
import { withDefaultUser } from '../adapters/graphile-worker/graphile-worker-pg.js';
import { createMemoryBackend } from '../adapters/memory/index.js';
import type { EnqueueResult, JobInput } from '../src/index.js';
import { unlinkPrefix } from './bullmq-bench-keys.js';

const REPLACES = Number(process.env.BENCH_REPLACES ?? 2_000);
const BATCH = Number(process.env.BENCH_BATCH ?? 1_000);
const WINDOW = 100;
const unique = {
  keys: ['type'],
  states: ['available', 'active', 'scheduled', 'retryable', 'pending', 'cancelled'],
  on_conflict: 'replace',
} as const;

interface Target {
  name: string;
  enqueue(job: JobInput): Promise<EnqueueResult>;
  enqueueMany(jobs: readonly JobInput[]): Promise<EnqueueResult[]>;
  close(): Promise<void>;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const job = (n: number): JobInput => ({ type: 'avatar.resize', args: { n }, unique });
const supersededBy = (result: EnqueueResult) => (result.outcome === 'replaced' ? 1 + (result.also_replaced?.length ?? 0) : 0);

async function measure(target: Target): Promise<void> {
  const latencies: number[] = [];
  let last: EnqueueResult | undefined;
  for (let n = 0; n < REPLACES; n++) {
    const start = process.hrtime.bigint();
    last = await target.enqueue(job(n));
    latencies.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  const first = median(latencies.slice(1, 1 + WINDOW));
  const late = median(latencies.slice(-WINDOW));
  const start = process.hrtime.bigint();
  const batch = await target.enqueueMany(Array.from({ length: BATCH }, (_, i) => job(REPLACES + i)));
  const perJob = Number(process.hrtime.bigint() - start) / 1e6 / BATCH;
  const batchSuperseded = batch.reduce((sum, result) => sum + supersededBy(result), 0);
  console.log(
    `| ${target.name} | ${first.toFixed(3)} | ${late.toFixed(3)} | ${(late / first).toFixed(2)} | ${supersededBy(last!)} | ` +
      `${perJob.toFixed(3)} | ${(perJob / first).toFixed(2)} | ${batchSuperseded} |`,
  );
}

async function main(): Promise<void> {
  console.log(`${REPLACES} single replaces of one key counting cancelled, then a batch of ${BATCH}; latencies in ms\n`);
  console.log(
    '| backend | adds 2-101 (median) | last 100 (median) | ratio | superseded by the last add | batch, per job | ratio to adds 2-101 | superseded in the batch |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');

  const memory = createMemoryBackend();
  await measure({
    name: 'memory',
    enqueue: (j) => memory.enqueue(j),
    enqueueMany: (j) => memory.enqueueMany(j),
    close: () => memory.close(),
  });

  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null });
  const prefix = `ojs-bench:${randomUUID()}`;
  const bullmq = createBullMQBackend({ connection: redis, prefix });
  try {
    await measure({
      name: 'bullmq',
      enqueue: (j) => bullmq.enqueue(j),
      enqueueMany: (j) => bullmq.enqueueMany(j),
      close: () => bullmq.close(),
    });
  } finally {
    await bullmq.close();
    await unlinkPrefix(redis, prefix);
    await redis.quit();
  }

  const connectionString = withDefaultUser(process.env.DATABASE_URL ?? 'postgres://127.0.0.1:5432/test', () => userInfo().username);
  const pool = new pg.Pool({ connectionString, max: 4 });
  const suffix = randomUUID().slice(0, 8);
  const schemas = { uniqueSchema: `ojs_bench_history_u_${suffix}`, workerSchema: `ojs_bench_history_gw_${suffix}` };
  const graphile = createGraphileWorkerBackend({ pgPool: pool, ...schemas });
  try {
    await graphile.ready();
    await measure({
      name: 'graphile-worker',
      enqueue: (j) => graphile.enqueue(j),
      enqueueMany: (j) => graphile.enqueueMany(j),
      close: () => graphile.close(),
    });
  } finally {
    await graphile.close();
    await pool.query(`drop schema if exists "${schemas.uniqueSchema}" cascade; drop schema if exists "${schemas.workerSchema}" cascade`);
    await pool.end();
  }
}

await main();
