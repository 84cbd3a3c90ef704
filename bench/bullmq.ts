/**
 * BullMQ adapter benchmark: unique adds against plain `queue.add`, measured in the same run.
 * Not a test: it prints a table (summarised in docs/benchmarks.md) and the targets it checks.
 *
 *   npm run bench:bullmq
 *   BENCH_N=5000 BENCH_REPS=3 BENCH_DEPTH=1000000 REDIS_URL=redis://127.0.0.1:6379 npm run bench:bullmq
 *
 * Method: each measurement uses a fresh queue under `ojs-bench:<uuid>` (deleted afterwards); 500
 * warm-up adds, then BENCH_N measured adds sequentially (one await at a time; per-call latency
 * with hrtime) and BENCH_N with 50 concurrent loops sharing the queue's connection. Repetitions
 * are interleaved across methods and the median repetition is reported.
 *
 * Depth: the duplicate check (reject path) on a queue holding BENCH_DEPTH waiting jobs against
 * an empty one. The check must not grow with queue depth.
 */
import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { withUniqueness, type UniqueQueue } from '../adapters/bullmq/index.js';
import { unlinkPrefix } from './bullmq-bench-keys.js';

const N = Number(process.env.BENCH_N ?? 5000);
const REPS = Number(process.env.BENCH_REPS ?? 3);
const DEPTH = Number(process.env.BENCH_DEPTH ?? 1_000_000);
const WARMUP = 500;
const CONCURRENCY = 50;
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null });

type AddFn = (queue: UniqueQueue, i: number) => Promise<unknown>;

const swallowDuplicate = (promise: Promise<unknown>) =>
  promise.catch((error: { code?: string }) => {
    if (error.code !== 'duplicate') throw error;
  });

const METHODS: { name: string; setup?: AddFn; add: AddFn; duplicateProbe?: false }[] = [
  { name: 'plain add', add: (q, i) => q.add('job', { user_id: i }) },
  { name: 'BullMQ deduplication {id} add (insert)', add: (q, i) => q.add('job', { user_id: i }, { deduplication: { id: `d${i}` } }) },
  { name: 'unique add, insert path', add: (q, i) => q.add('job', { user_id: i }, { unique: { keys: ['type', 'args'] } }) },
  {
    name: 'unique add, duplicate path (reject)',
    setup: (q) => q.add('job', { user_id: -1 }, { unique: { keys: ['type', 'args'] } }),
    add: (q) => swallowDuplicate(q.add('job', { user_id: -1 }, { unique: { keys: ['type', 'args'] } })),
  },
  {
    name: 'unique add, duplicate path (ignore)',
    setup: (q) => q.add('job', { user_id: -1 }, { unique: { keys: ['type', 'args'], on_conflict: 'ignore' } }),
    add: (q) => q.add('job', { user_id: -1 }, { unique: { keys: ['type', 'args'], on_conflict: 'ignore' } }),
  },
  { name: 'unique replace', add: (q, i) => q.add('job', { user_id: -1, i }, { unique: { keys: ['type'], on_conflict: 'replace' } }) },
  // The duplicate paths again with the probe off (withUniqueness(queue, { duplicateProbe: false })):
  // what the probe buys, in the same run.
  {
    name: 'unique add, duplicate path (reject), no probe',
    duplicateProbe: false,
    setup: (q) => q.add('job', { user_id: -1 }, { unique: { keys: ['type', 'args'] } }),
    add: (q) => swallowDuplicate(q.add('job', { user_id: -1 }, { unique: { keys: ['type', 'args'] } })),
  },
  {
    name: 'unique add, duplicate path (ignore), no probe',
    duplicateProbe: false,
    setup: (q) => q.add('job', { user_id: -1 }, { unique: { keys: ['type', 'args'], on_conflict: 'ignore' } }),
    add: (q) => q.add('job', { user_id: -1 }, { unique: { keys: ['type', 'args'], on_conflict: 'ignore' } }),
  },
];

interface Sample {
  seqMedianMs: number;
  seqOps: number;
  concOps: number;
  concP50Ms: number;
  concP99Ms: number;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const pct = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))]!;

async function withQueue<T>(body: (queue: UniqueQueue, raw: Queue) => Promise<T>, duplicateProbe = true): Promise<T> {
  const prefix = `ojs-bench:${randomUUID()}`;
  const raw = new Queue('bench', { connection: redis, prefix });
  try {
    return await body(withUniqueness(raw, { duplicateProbe }), raw);
  } finally {
    await raw.close();
    await unlinkPrefix(redis, prefix);
    await settle();
  }
}

/**
 * Waits until Redis has freed what UNLINK handed to its background thread and finished growing
 * its key table: on a small machine both compete with the next measurement for CPU, which would
 * be charged to whichever method runs next.
 */
async function settle(): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (/lazyfree_pending_objects:0\b/.test(await redis.info('memory'))) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await new Promise((resolve) => setTimeout(resolve, 300));
}

async function measure(method: (typeof METHODS)[number], existing?: UniqueQueue): Promise<Sample> {
  if (existing) return run(method, existing);
  return withQueue((queue) => run(method, queue), method.duplicateProbe ?? true);
}

async function run(method: (typeof METHODS)[number], queue: UniqueQueue): Promise<Sample> {
  {
    if (method.setup) await method.setup(queue, -1);
    let i = 0;
    for (let w = 0; w < WARMUP; w++) await method.add(queue, i++);
    const latencies: number[] = [];
    let start = process.hrtime.bigint();
    for (let n = 0; n < N; n++) {
      const t = process.hrtime.bigint();
      await method.add(queue, i++);
      latencies.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
    const seqOps = N / (Number(process.hrtime.bigint() - start) / 1e9);
    const concLatencies: number[] = [];
    let next = 0;
    start = process.hrtime.bigint();
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < N) {
          next++;
          const t = process.hrtime.bigint();
          await method.add(queue, i++);
          concLatencies.push(Number(process.hrtime.bigint() - t) / 1e6);
        }
      }),
    );
    const concOps = N / (Number(process.hrtime.bigint() - start) / 1e9);
    return { seqMedianMs: median(latencies), seqOps, concOps, concP50Ms: median(concLatencies), concP99Ms: pct(concLatencies, 0.99) };
  }
}

function medianSample(samples: Sample[]): Sample {
  return samples.sort((a, b) => a.concOps - b.concOps)[Math.floor(samples.length / 2)]!;
}

async function fill(raw: Queue, count: number): Promise<void> {
  for (let done = 0; done < count; done += 1000) {
    const size = Math.min(1000, count - done);
    await raw.addBulk(Array.from({ length: size }, (_, k) => ({ name: 'filler', data: { k: done + k } })));
  }
}

async function main(): Promise<void> {
  const redisVersion = /redis_version:(\S+)/.exec(await redis.info('server'))?.[1] ?? '?';
  console.log(
    `BullMQ adapter benchmark: N=${N}, reps=${REPS}, concurrency=${CONCURRENCY}, depth=${DEPTH}, Redis ${redisVersion}, Node ${process.version}`,
  );
  const results = new Map<string, Sample[]>();
  // One unrecorded pass first: JIT and connection warm-up would otherwise land on whichever
  // method runs first.
  for (const method of METHODS) await measure(method);
  for (let rep = 0; rep < REPS; rep++) {
    for (const method of METHODS) {
      const sample = await measure(method);
      results.set(method.name, [...(results.get(method.name) ?? []), sample]);
      process.stderr.write('.');
    }
  }
  process.stderr.write('\n');
  const table = new Map([...results].map(([name, samples]) => [name, medianSample(samples)]));
  const plain = table.get('plain add')!;
  const dedup = table.get('BullMQ deduplication {id} add (insert)')!;
  const fmt = (n: number, d = 0) => n.toFixed(d);
  console.log('\n| method | seq median ms | seq ops/s | seq ×plain | conc50 ops/s | conc50 ×plain | conc50 p50 ms | conc50 p99 ms |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const [name, s] of table) {
    console.log(
      `| ${name} | ${fmt(s.seqMedianMs, 3)} | ${fmt(s.seqOps)} | ${fmt(s.seqOps / plain.seqOps, 2)} | ${fmt(s.concOps)} | ${fmt(s.concOps / plain.concOps, 2)} | ${fmt(s.concP50Ms, 2)} | ${fmt(s.concP99Ms, 2)} |`,
    );
  }

  const reject = METHODS.find((m) => m.name === 'unique add, duplicate path (reject)')!;
  const empty: Sample[] = [];
  const deep: Sample[] = [];
  await withQueue(async (deepQueue, raw) => {
    await fill(raw, DEPTH);
    await settle();
    console.error(`filled: ${await raw.getWaitingCount()} waiting jobs`);
    for (let rep = 0; rep < REPS; rep++) {
      // Each rep checks a fresh fingerprint in the deep queue (the setup adds its one job).
      const unique = { keys: ['type', 'args'] } as const;
      const fresh = {
        name: reject.name,
        setup: (q: UniqueQueue) => q.add('job', { user_id: -1 - rep }, { unique }),
        add: (q: UniqueQueue) => swallowDuplicate(q.add('job', { user_id: -1 - rep }, { unique })),
      };
      deep.push(await measure(fresh, deepQueue));
      empty.push(await measure(reject));
      process.stderr.write('.');
    }
  });
  process.stderr.write('\n');
  const e = medianSample(empty);
  const d = medianSample(deep);
  console.log(`\n| duplicate check (reject) | seq median ms | conc50 ops/s |`);
  console.log('|---|---|---|');
  console.log(`| empty queue | ${fmt(e.seqMedianMs, 3)} | ${fmt(e.concOps)} |`);
  console.log(`| ${DEPTH.toLocaleString('en')} waiting jobs | ${fmt(d.seqMedianMs, 3)} | ${fmt(d.concOps)} |`);
  console.log(
    `| depth ratio (latency deep / empty) | ${fmt(d.seqMedianMs / e.seqMedianMs, 2)} | ${fmt(e.concOps / d.concOps, 2)} (throughput empty / deep) |`,
  );

  const insert = table.get('unique add, insert path')!;
  const dupReject = table.get('unique add, duplicate path (reject)')!;
  const dupIgnore = table.get('unique add, duplicate path (ignore)')!;
  const targets = [
    [`unique insert conc50 throughput ≥ 0.85 × deduplication add`, insert.concOps / dedup.concOps, insert.concOps >= 0.85 * dedup.concOps],
    [`duplicate path (reject) no slower than plain add (conc50)`, dupReject.concOps / plain.concOps, dupReject.concOps >= plain.concOps],
    [`duplicate path (ignore) no slower than plain add (conc50)`, dupIgnore.concOps / plain.concOps, dupIgnore.concOps >= plain.concOps],
    [`depth ratio ≤ 1.1 (sequential latency)`, d.seqMedianMs / e.seqMedianMs, d.seqMedianMs / e.seqMedianMs <= 1.1],
  ] as const;
  console.log('\n| target | measured | met |');
  console.log('|---|---|---|');
  for (const [name, value, met] of targets) console.log(`| ${name} | ${fmt(value, 2)} | ${met ? 'yes' : 'NO'} |`);
  await redis.quit();
}

await main();
