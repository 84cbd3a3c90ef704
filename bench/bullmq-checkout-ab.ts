/**
 * This checkout's BullMQ adds against another checkout's, in one process, alternating blocks of
 * adds so that load on a shared machine falls on both alike (not the benchmark: bench/bullmq.ts
 * is). Any change of script, arguments or Node code can be compared, the KEYS and ARGV layout
 * included (bench/bullmq-script-ab.ts needs the same layout).
 *
 *   git worktree add --detach /tmp/before <commit>   (node_modules: a symlink to this one's)
 *   REDIS_URL=redis://127.0.0.1:<a redis-server of your own> npx tsx bench/bullmq-checkout-ab.ts /tmp/before
 *
 * Per version and path: a queue of its own, 500 warm-up adds, then BENCH_BLOCKS rounds of
 * BENCH_BLOCK sequential adds per path and version (the order of the versions alternating). Per
 * block: Redis CPU µs per add (INFO cpu, user + sys: a descheduled server does not inflate it,
 * so use a server of your own), Redis µs per add (INFO commandstats usec of FCALL/EVALSHA/EVAL),
 * commands per add (every command INFO commandstats counts, scripts' own included), Node CPU µs
 * per add (process.cpuUsage). Prints the median block, and each path's ratio to its baseline
 * (inserts ÷ BullMQ's `deduplication` add, duplicates ÷ a plain add) paired within each block,
 * median over the blocks. BENCH_PATHS picks paths (comma-separated names of ADDS below).
 */
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { withUniqueness, type UniqueQueue } from '../adapters/bullmq/index.js';

const other = process.argv[2];
if (!other) throw new Error('usage: npx tsx bench/bullmq-checkout-ab.ts <other checkout>');
const BLOCK = Number(process.env.BENCH_BLOCK ?? 1000);
const BLOCKS = Number(process.env.BENCH_BLOCKS ?? 12);
const otherAdapter = (await import(pathToFileURL(resolve(other, 'adapters/bullmq/index.ts')).href)) as {
  withUniqueness: typeof withUniqueness;
};
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null });

const NATIVE = { keys: ['type', 'queue', 'args'] } as const;
const INDEX = { keys: ['type', 'args'] } as const;
const swallow = (promise: Promise<unknown>) =>
  promise.catch((error: { code?: string }) => {
    if (error.code !== 'duplicate') throw error;
  });
/** Each path's add, the add that makes its duplicate's job (if any), and its baseline. */
const ADDS: Record<
  string,
  { add: (q: UniqueQueue, i: number) => Promise<unknown>; setup?: (q: UniqueQueue) => Promise<unknown>; base?: string }
> = {
  plain: { add: (q, i) => q.add('job', { user_id: i }) },
  dedup: { add: (q, i) => q.add('job', { user_id: i }, { deduplication: { id: `d${i}` } }) },
  'native insert': { add: (q, i) => q.add('job', { user_id: i }, { unique: NATIVE }), base: 'dedup' },
  'native reject': {
    setup: (q) => q.add('job', { user_id: -1 }, { unique: NATIVE }),
    add: (q) => swallow(q.add('job', { user_id: -1 }, { unique: NATIVE })),
    base: 'plain',
  },
  'native ignore': {
    setup: (q) => q.add('job', { user_id: -1 }, { unique: NATIVE }),
    add: (q) => q.add('job', { user_id: -1 }, { unique: { ...NATIVE, on_conflict: 'ignore' } }),
    base: 'plain',
  },
  'index insert': { add: (q, i) => q.add('job', { user_id: i }, { unique: INDEX }), base: 'dedup' },
};
const paths = (process.env.BENCH_PATHS ?? 'plain,dedup,native insert,native reject,native ignore,index insert').split(',');

async function stats(): Promise<{ cpu: number; usec: number; calls: number }> {
  const cpu = await redis.info('cpu');
  const commands = await redis.info('commandstats');
  let usec = 0;
  let calls = 0;
  for (const match of commands.matchAll(/cmdstat_([\w|]+):calls=(\d+),usec=(\d+)/g)) {
    if (match[1] === 'evalsha' || match[1] === 'eval' || match[1] === 'fcall') usec += Number(match[3]);
    if (match[1] !== 'info') calls += Number(match[2]);
  }
  const seconds = Number(/used_cpu_user:([\d.]+)/.exec(cpu)![1]) + Number(/used_cpu_sys:([\d.]+)/.exec(cpu)![1]);
  return { cpu: seconds * 1e6, usec, calls };
}

const versions = { before: otherAdapter.withUniqueness, this: withUniqueness };
const queues = new Map<string, UniqueQueue>();
const raws: Queue[] = [];
let n = 0;
for (const [version, wrap] of Object.entries(versions)) {
  for (const path of paths) {
    const raw = new Queue('bench', { connection: redis, prefix: `ojs-ab:${randomUUID()}` });
    raws.push(raw);
    const queue = wrap(raw) as UniqueQueue;
    await ADDS[path]!.setup?.(queue);
    for (let i = 0; i < 500; i++) await ADDS[path]!.add(queue, n++);
    queues.set(`${version} ${path}`, queue);
  }
}
const samples = new Map<string, { cpu: number[]; usec: number[]; calls: number[]; node: number[] }>();
for (let block = 0; block < BLOCKS; block++) {
  for (const path of paths) {
    for (const version of block % 2 === 0 ? ['before', 'this'] : ['this', 'before']) {
      const name = `${version} ${path}`;
      const queue = queues.get(name)!;
      const before = await stats();
      const cpu = process.cpuUsage();
      for (let i = 0; i < BLOCK; i++) await ADDS[path]!.add(queue, n++);
      const used = process.cpuUsage(cpu);
      const after = await stats();
      const entry = samples.get(name) ?? { cpu: [], usec: [], calls: [], node: [] };
      entry.cpu.push((after.cpu - before.cpu) / BLOCK);
      entry.usec.push((after.usec - before.usec) / BLOCK);
      // Less the INFO commands of `stats` between the blocks.
      entry.calls.push((after.calls - before.calls - 1) / BLOCK);
      entry.node.push((used.user + used.system) / BLOCK);
      samples.set(name, entry);
    }
  }
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
console.log(`${BLOCKS} blocks of ${BLOCK} sequential adds per path and version; ${other} is "before". Median block:`);
console.log('| version, path | Redis CPU µs | Redis µs (scripts) | commands | Node CPU µs |');
console.log('|---|---|---|---|---|');
for (const [name, s] of samples)
  console.log(
    `| ${name} | ${median(s.cpu).toFixed(1)} | ${median(s.usec).toFixed(1)} | ${median(s.calls).toFixed(1)} | ${median(s.node).toFixed(1)} |`,
  );
console.log('\n| ratio, paired within each block | Redis CPU | Redis µs | Node CPU |');
console.log('|---|---|---|---|');
for (const path of paths) {
  const base = ADDS[path]!.base;
  if (base === undefined || !paths.includes(base)) continue;
  for (const version of ['before', 'this']) {
    const s = samples.get(`${version} ${path}`)!;
    const b = samples.get(`${version} ${base}`)!;
    const ratio = (key: 'cpu' | 'usec' | 'node') => median(s[key].map((value, i) => value / b[key][i]!)).toFixed(2);
    console.log(`| ${version}: ${path} ÷ ${base} | ${ratio('cpu')} | ${ratio('usec')} | ${ratio('node')} |`);
  }
}
for (const raw of raws) await raw.obliterate({ force: true }).catch(() => {});
for (const raw of raws) await raw.close();
await redis.quit();
