/**
 * BullMQ adapter benchmark: unique adds against BullMQ's own adds, measured in the same run. Not a
 * test: it prints issue 11's table (each ratio against its target), a per-path breakdown and the
 * sidecar's memory (summarised in docs/benchmarks.md).
 *
 *   npm run bench:bullmq
 *   BENCH_N=5000 BENCH_REPS=3 BENCH_DEPTH=1000000 BENCH_MEM_N=5000 npm run bench:bullmq
 *   BENCH_REDIS=shared REDIS_URL=redis://127.0.0.1:6379 npm run bench:bullmq   (no server of its own)
 *
 * Method (printed with the results):
 *  - Redis: a redis-server of the benchmark's own on a free port (default), so that INFO
 *    commandstats counts this benchmark's commands only; BENCH_REDIS=shared uses REDIS_URL.
 *  - Throughput: each measurement uses a fresh queue under `ojs-bench:<uuid>` (deleted afterwards);
 *    500 warm-up adds, then BENCH_N sequential adds (one await at a time) and BENCH_N with 50
 *    concurrent loops sharing the queue's connection. One unrecorded pass, then BENCH_REPS
 *    rounds, the methods interleaved within each round. The throughput table shows each method's
 *    median round; every ratio in the targets table pairs two methods within one round and gives
 *    the median over the rounds with their range.
 *  - Breakdown, per path, over the sequential adds of every recorded round (median): Redis µs per
 *    add = the usec INFO commandstats adds up for the commands clients sent (FCALL/EVALSHA/EVAL, which
 *    include what their scripts run, BullMQ's add scripts among them) ÷ adds; Node CPU µs per add =
 *    process.cpuUsage (user + system, so the socket's system calls too) ÷ adds.
 *  - Depth: the duplicate check (reject) on a queue holding BENCH_DEPTH waiting jobs against an
 *    empty one, sequential median latency.
 *  - Sidecar memory: BENCH_MEM_N unique adds; the sum of MEMORY USAGE (SAMPLES 0) of every key
 *    under the prefix with `ojs` in its name, per live job. Then a BullMQ Worker completes them
 *    all with BullMQ's default retention (completed jobs kept) and BENCH_MEM_N more are added:
 *    the sidecar then ÷ the sidecar of BENCH_MEM_N live jobs. The completed jobs' `finishedOn` is
 *    back-dated past the scripts' replay grace (includes/ojs-index.lua), as for jobs that finished
 *    minutes ago: within it their entries are kept by design.
 *  - Steady state: BENCH_STEADY_LIVE live unique jobs, then BENCH_STEADY_N rounds of "complete one
 *    (back-dated as above), add one": index fields ÷ live jobs.
 */
import { randomUUID } from 'node:crypto';
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { withUniqueness, type UniqueQueue } from '../adapters/bullmq/index.js';
import { unlinkPrefix } from './bullmq-bench-keys.js';

const N = Number(process.env.BENCH_N ?? 5000);
const REPS = Number(process.env.BENCH_REPS ?? 3);
const DEPTH = Number(process.env.BENCH_DEPTH ?? 1_000_000);
const MEM_N = Number(process.env.BENCH_MEM_N ?? 5000);
const STEADY_LIVE = Number(process.env.BENCH_STEADY_LIVE ?? 500);
const STEADY_N = Number(process.env.BENCH_STEADY_N ?? 6000);
/** Older than the scripts' replay grace (OJS_REPLAY_GRACE_MS, includes/ojs-index.lua). */
const PAST_REPLAY_GRACE_MS = 3_600_000;
const WARMUP = 500;
const CONCURRENCY = 50;

/** A redis-server of the benchmark's own (BENCH_REDIS=shared: REDIS_URL instead). */
async function ownRedis(): Promise<{ url: string; child?: ChildProcess }> {
  if (process.env.BENCH_REDIS === 'shared') return { url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' };
  const free = await new Promise<number>((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as net.AddressInfo).port;
      server.close(() => resolve(port));
    });
  });
  const child = spawn('redis-server', ['--port', String(free), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
  });
  const url = `redis://127.0.0.1:${free}`;
  for (let i = 0; i < 100; i++) {
    const probe = new Redis(url, { lazyConnect: true, retryStrategy: () => null });
    probe.on('error', () => {});
    try {
      await probe.connect();
      await probe.quit();
      return { url, child };
    } catch {
      probe.disconnect();
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  child.kill();
  throw new Error('the benchmark could not start a redis-server of its own');
}

const server = await ownRedis();
const redis = new Redis(server.url, { maxRetriesPerRequest: null });

type AddFn = (queue: UniqueQueue, i: number) => Promise<unknown>;

const swallowDuplicate = (promise: Promise<unknown>) =>
  promise.catch((error: { code?: string }) => {
    if (error.code !== 'duplicate') throw error;
  });

const NATIVE = { keys: ['type', 'queue', 'args'] } as const;

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
  // A policy with the `queue` dimension and the default states: the native path (BullMQ's
  // deduplication key, adapters/bullmq/bullmq-native-path.ts).
  { name: 'native add, insert path', add: (q, i) => q.add('job', { user_id: i }, { unique: NATIVE }) },
  {
    name: 'native add, duplicate path (reject)',
    setup: (q) => q.add('job', { user_id: -1 }, { unique: NATIVE }),
    add: (q) => swallowDuplicate(q.add('job', { user_id: -1 }, { unique: NATIVE })),
  },
  {
    name: 'native add, duplicate path (ignore)',
    setup: (q) => q.add('job', { user_id: -1 }, { unique: { ...NATIVE, on_conflict: 'ignore' } }),
    add: (q) => q.add('job', { user_id: -1 }, { unique: { ...NATIVE, on_conflict: 'ignore' } }),
  },
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
  /** Node CPU µs per sequential add. */
  nodeUs: number;
  /** Redis µs per sequential add (INFO commandstats). */
  redisUs: number;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const pct = (values: number[], p: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * p))]!;

/** usec INFO commandstats counts for the commands clients sent (a script's own commands are inside its FCALL's or EVALSHA's usec). */
async function clientCommandUsec(): Promise<number> {
  const info = await redis.info('commandstats');
  let usec = 0;
  for (const match of info.matchAll(/cmdstat_([\w|]+):calls=\d+,usec=(\d+)/g)) {
    if (match[1] === 'evalsha' || match[1] === 'eval' || match[1] === 'fcall') usec += Number(match[2]);
  }
  return usec;
}

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
    const usecBefore = await clientCommandUsec();
    const cpu = process.cpuUsage();
    let start = process.hrtime.bigint();
    for (let n = 0; n < N; n++) {
      const t = process.hrtime.bigint();
      await method.add(queue, i++);
      latencies.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
    const seqOps = N / (Number(process.hrtime.bigint() - start) / 1e9);
    const used = process.cpuUsage(cpu);
    const redisUs = ((await clientCommandUsec()) - usecBefore) / N;
    const nodeUs = (used.user + used.system) / N;
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
    return {
      seqMedianMs: median(latencies),
      seqOps,
      concOps,
      concP50Ms: median(concLatencies),
      concP99Ms: pct(concLatencies, 0.99),
      nodeUs,
      redisUs,
    };
  }
}

function medianSample(samples: Sample[]): Sample {
  return [...samples].sort((a, b) => a.concOps - b.concOps)[Math.floor(samples.length / 2)]!;
}

async function fill(raw: Queue, count: number): Promise<void> {
  for (let done = 0; done < count; done += 1000) {
    const size = Math.min(1000, count - done);
    await raw.addBulk(Array.from({ length: size }, (_, k) => ({ name: 'filler', data: { k: done + k } })));
  }
}

/** Bytes (MEMORY USAGE, SAMPLES 0) of the keys under `prefix` with `ojs` in their name. */
async function sidecarBytes(prefix: string): Promise<number> {
  let bytes = 0;
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*ojs*`, 'COUNT', 1000);
    cursor = next;
    for (const key of keys) bytes += Number(await redis.memory('USAGE', key, 'SAMPLES', 0));
  } while (cursor !== '0');
  return bytes;
}

/** The sidecar per live unique job, and its growth once those jobs completed (kept) and as many more were added. */
async function sidecarMemory(): Promise<{ perJob: number; afterCompleted: number; live: number }> {
  const unique = { keys: ['type', 'args'] } as const;
  return withQueue(async (queue, raw) => {
    const prefix = raw.opts.prefix!;
    for (let i = 0; i < MEM_N; i++) await queue.add('job', { user_id: i }, { unique });
    const live = await sidecarBytes(prefix);
    const connection = new Redis(server.url, { maxRetriesPerRequest: null });
    const worker = new Worker('bench', async () => 'done', { connection, prefix, concurrency: 50 });
    while ((await raw.getCompletedCount()) < MEM_N) await new Promise((resolve) => setTimeout(resolve, 100));
    await worker.close();
    await connection.quit();
    const longAgo = Date.now() - PAST_REPLAY_GRACE_MS;
    for (const job of await raw.getCompleted(0, -1)) await redis.hset(`${prefix}:bench:${job.id}`, 'finishedOn', longAgo);
    for (let i = MEM_N; i < 2 * MEM_N; i++) await queue.add('job', { user_id: i }, { unique });
    const after = await sidecarBytes(prefix);
    return { perJob: live / MEM_N, afterCompleted: after / live, live };
  });
}

/** Index fields ÷ live jobs after a steady "complete one, add one" workload (completed jobs kept). */
async function steadyState(): Promise<number> {
  const unique = { keys: ['type', 'args'] } as const;
  return withQueue(async (queue, raw) => {
    const prefix = raw.opts.prefix!;
    for (let i = 0; i < STEADY_LIVE; i++) await queue.add('job', { user_id: i }, { unique });
    const connection = new Redis(server.url, { maxRetriesPerRequest: null });
    const worker = new Worker('bench', null, { connection, prefix, autorun: false });
    for (let i = STEADY_LIVE; i < STEADY_LIVE + STEADY_N; i++) {
      const job = (await worker.getNextJob('bench', { block: false }))!;
      await job.moveToCompleted('done', 'bench', false);
      await redis.hset(`${prefix}:bench:${job.id}`, 'finishedOn', Date.now() - PAST_REPLAY_GRACE_MS);
      await queue.add('job', { user_id: i }, { unique });
    }
    await worker.close();
    await connection.quit();
    return (await redis.hlen(`${prefix}:ojs:global:index`)) / STEADY_LIVE;
  });
}

async function main(): Promise<void> {
  const redisVersion = /redis_version:(\S+)/.exec(await redis.info('server'))?.[1] ?? '?';
  console.log(
    `BullMQ adapter benchmark: N=${N}, reps=${REPS}, concurrency=${CONCURRENCY}, depth=${DEPTH}, memory N=${MEM_N}, Redis ${redisVersion} (${server.child ? "the benchmark's own server" : server.url}), Node ${process.version}`,
  );
  console.log(
    'Method: fresh queue per measurement, 500 warm-up adds, N sequential then N with 50 in flight; one unrecorded pass, then the methods interleaved in each round; the throughput table shows the median round, the targets pair two methods within each round (median and range over the rounds). Breakdown over the sequential adds: Redis µs = INFO commandstats usec of FCALL/EVALSHA/EVAL (scripts include what they run) ÷ adds; Node µs = process.cpuUsage (user + system) ÷ adds.',
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
  const fmt = (n: number, d = 0) => n.toFixed(d);
  console.log('\n| method | seq median ms | seq ops/s | seq ×plain | conc50 ops/s | conc50 ×plain | conc50 p50 ms | conc50 p99 ms |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const [name, s] of table) {
    console.log(
      `| ${name} | ${fmt(s.seqMedianMs, 3)} | ${fmt(s.seqOps)} | ${fmt(s.seqOps / plain.seqOps, 2)} | ${fmt(s.concOps)} | ${fmt(s.concOps / plain.concOps, 2)} | ${fmt(s.concP50Ms, 2)} | ${fmt(s.concP99Ms, 2)} |`,
    );
  }

  // The breakdown: medians over the recorded rounds, each path's own.
  const perPath = (name: string) => {
    const samples = results.get(name)!;
    return { node: median(samples.map((s) => s.nodeUs)), redis: median(samples.map((s) => s.redisUs)) };
  };
  const breakdown: [string, string][] = [
    ['plain', 'plain add'],
    ['dedup', 'BullMQ deduplication {id} add (insert)'],
    ['insert', 'unique add, insert path'],
    ['reject', 'unique add, duplicate path (reject)'],
    ['ignore', 'unique add, duplicate path (ignore)'],
    ['replace', 'unique replace'],
    ['reject, no probe', 'unique add, duplicate path (reject), no probe'],
    ['ignore, no probe', 'unique add, duplicate path (ignore), no probe'],
    ['native insert', 'native add, insert path'],
    ['native reject', 'native add, duplicate path (reject)'],
    ['native ignore', 'native add, duplicate path (ignore)'],
  ];
  const cost = new Map(breakdown.map(([short, name]) => [short, perPath(name)]));
  console.log('\n| path | Redis µs per add | ×dedup | ×plain | Node CPU µs per add | ×dedup | ×plain |');
  console.log('|---|---|---|---|---|---|---|');
  for (const [short, c] of cost) {
    const d = cost.get('dedup')!;
    const p = cost.get('plain')!;
    console.log(
      `| ${short} | ${fmt(c.redis, 1)} | ${fmt(c.redis / d.redis, 2)} | ${fmt(c.redis / p.redis, 2)} | ${fmt(c.node, 1)} | ${fmt(c.node / d.node, 2)} | ${fmt(c.node / p.node, 2)} |`,
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
      // Each rep checks a fresh key in the deep queue (the setup adds its one job).
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

  const memory = await sidecarMemory();
  const steady = await steadyState();

  // Every ratio pairs two methods measured in the same round (the methods are interleaved within
  // a round), then takes the median over the rounds and reports their range: pairing each
  // method's own median round instead paired different rounds, whose drift on a shared machine
  // gave readings like 0.26.
  const paired = (a: string, b: string, pick: (s: Sample) => number) => {
    const as = results.get(a)!;
    const bs = results.get(b)!;
    const ratios = as.map((sample, round) => pick(sample) / pick(bs[round]!));
    return { median: median(ratios), min: Math.min(...ratios), max: Math.max(...ratios) };
  };
  const DEDUP = 'BullMQ deduplication {id} add (insert)';
  const PLAIN = 'plain add';
  const INSERT = 'unique add, insert path';
  const conc = (s: Sample) => s.concOps;
  const seq = (s: Sample) => s.seqOps;
  const redisUs = (s: Sample) => s.redisUs;
  const nodeUs = (s: Sample) => s.nodeUs;
  const atMost = (limit: number) => (value: number) => value <= limit;
  const atLeast = (limit: number) => (value: number) => value >= limit;
  const pairedRows: [string, { median: number; min: number; max: number }, string, (value: number) => boolean][] = [
    ['Redis µs per unique insert ÷ deduplication add (sequential adds)', paired(INSERT, DEDUP, redisUs), '≤ 1.3', atMost(1.3)],
    ['unique insert throughput ÷ deduplication add, 50 in flight', paired(INSERT, DEDUP, conc), '≥ 0.85', atLeast(0.85)],
    ['unique insert throughput ÷ deduplication add, one at a time', paired(INSERT, DEDUP, seq), '≥ 0.8', atLeast(0.8)],
    [
      'duplicate (reject) throughput ÷ plain add, 50 in flight',
      paired('unique add, duplicate path (reject)', PLAIN, conc),
      '≥ 1.0',
      atLeast(1),
    ],
    [
      'duplicate (ignore) throughput ÷ plain add, 50 in flight',
      paired('unique add, duplicate path (ignore)', PLAIN, conc),
      '≥ 1.0',
      atLeast(1),
    ],
    ['replace throughput ÷ plain add, 50 in flight', paired('unique replace', PLAIN, conc), '≥ 0.6', atLeast(0.6)],
    [
      'native: Redis µs per insert ÷ deduplication add (sequential adds)',
      paired('native add, insert path', DEDUP, redisUs),
      '≤ 1.3',
      atMost(1.3),
    ],
    [
      'native: insert throughput ÷ deduplication add, 50 in flight',
      paired('native add, insert path', DEDUP, conc),
      '≥ 0.85',
      atLeast(0.85),
    ],
    ['native: insert throughput ÷ deduplication add, one at a time', paired('native add, insert path', DEDUP, seq), '≥ 0.8', atLeast(0.8)],
    [
      'native: duplicate (reject) throughput ÷ plain add, 50 in flight',
      paired('native add, duplicate path (reject)', PLAIN, conc),
      '≥ 1.0',
      atLeast(1),
    ],
    [
      'native: duplicate (ignore) throughput ÷ plain add, 50 in flight',
      paired('native add, duplicate path (ignore)', PLAIN, conc),
      '≥ 1.0',
      atLeast(1),
    ],
    ['Node CPU µs per unique insert ÷ deduplication add', paired(INSERT, DEDUP, nodeUs), '≤ 1.3', atMost(1.3)],
    ['Node CPU µs per duplicate (reject) ÷ plain add', paired('unique add, duplicate path (reject)', PLAIN, nodeUs), '≤ 1.0', atMost(1)],
    ['Node CPU µs per duplicate (ignore) ÷ plain add', paired('unique add, duplicate path (ignore)', PLAIN, nodeUs), '≤ 1.0', atMost(1)],
  ];
  console.log(`\n| ratio, paired within each of the ${REPS} rounds | median | range | target | met (median) |`);
  console.log('|---|---|---|---|---|');
  for (const [name, ratio, target, met] of pairedRows) {
    console.log(
      `| ${name} | ${fmt(ratio.median, 2)} | ${fmt(ratio.min, 2)}–${fmt(ratio.max, 2)} | ${target} | ${met(ratio.median) ? 'yes' : 'NO'} |`,
    );
  }

  const rows: [string, number, string, boolean][] = [
    [
      `duplicate check with ${DEPTH.toLocaleString('en')} queued jobs ÷ empty (sequential latency)`,
      d.seqMedianMs / e.seqMedianMs,
      '≤ 1.1',
      d.seqMedianMs / e.seqMedianMs <= 1.1,
    ],
    ['sidecar bytes per live unique job (keys with `ojs` in their name)', memory.perJob, '≤ 150', memory.perJob <= 150],
    [
      `sidecar after ${MEM_N.toLocaleString('en')} completed (kept) + ${MEM_N.toLocaleString('en')} more ÷ sidecar of ${MEM_N.toLocaleString('en')} live`,
      memory.afterCompleted,
      '≤ 1.5',
      memory.afterCompleted <= 1.5,
    ],
    [
      `index fields ÷ ${STEADY_LIVE.toLocaleString('en')} live jobs after ${STEADY_N.toLocaleString('en')} × "complete one, add one" (steady state)`,
      steady,
      '≤ 1.5',
      steady <= 1.5,
    ],
  ];
  console.log('\n| depth and memory | now | target | met |');
  console.log('|---|---|---|---|');
  for (const [name, value, target, met] of rows) console.log(`| ${name} | ${fmt(value, 2)} | ${target} | ${met ? 'yes' : 'NO'} |`);
  await redis.quit();
  server.child?.kill();
}

await main();
