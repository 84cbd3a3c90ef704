/**
 * Per-path cost of one add, for finding where the time goes (not the benchmark: bench/bullmq.ts
 * is). For each path: BENCH_N sequential adds on a fresh queue after a warm-up, Node CPU per add
 * (process.cpuUsage, user + system) and Redis time per add (INFO commandstats: usec of every
 * command run, divided by the adds). Paths given as arguments run alone, e.g.
 *
 *   npx tsx bench/bullmq-profile.ts insert reject native-insert native-reject native-ignore
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/bullmq-profile.ts insert
 */
import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { withUniqueness, type UniqueQueue } from '../adapters/bullmq/index.js';
import { unlinkPrefix } from './bullmq-bench-keys.js';

const N = Number(process.env.BENCH_N ?? 5000);
const REPS = Number(process.env.BENCH_REPS ?? 3);
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null });

const swallow = (promise: Promise<unknown>) =>
  promise.catch((error: { code?: string }) => {
    if (error.code !== 'duplicate') throw error;
  });

const NATIVE = { keys: ['type', 'queue', 'args'] } as const;

const PATHS: Record<string, { setup?: (q: UniqueQueue) => Promise<unknown>; add: (q: UniqueQueue, i: number) => Promise<unknown> }> = {
  plain: { add: (q, i) => q.add('job', { user_id: i }) },
  dedup: { add: (q, i) => q.add('job', { user_id: i }, { deduplication: { id: `d${i}` } }) },
  insert: { add: (q, i) => q.add('job', { user_id: i }, { unique: { keys: ['type', 'args'] } }) },
  reject: {
    setup: (q) => q.add('job', { user_id: -1 }, { unique: { keys: ['type', 'args'] } }),
    add: (q) => swallow(q.add('job', { user_id: -1 }, { unique: { keys: ['type', 'args'] } })),
  },
  ignore: {
    setup: (q) => q.add('job', { user_id: -1 }, { unique: { keys: ['type', 'args'], on_conflict: 'ignore' } }),
    add: (q) => q.add('job', { user_id: -1 }, { unique: { keys: ['type', 'args'], on_conflict: 'ignore' } }),
  },
  replace: { add: (q, i) => q.add('job', { user_id: -1, i }, { unique: { keys: ['type'], on_conflict: 'replace' } }) },
  // The native path (a policy with the `queue` dimension: BullMQ's deduplication key).
  'native-insert': { add: (q, i) => q.add('job', { user_id: i }, { unique: NATIVE }) },
  'native-reject': {
    setup: (q) => q.add('job', { user_id: -1 }, { unique: NATIVE }),
    add: (q) => swallow(q.add('job', { user_id: -1 }, { unique: NATIVE })),
  },
  'native-ignore': {
    setup: (q) => q.add('job', { user_id: -1 }, { unique: { ...NATIVE, on_conflict: 'ignore' } }),
    add: (q) => q.add('job', { user_id: -1 }, { unique: { ...NATIVE, on_conflict: 'ignore' } }),
  },
};

/**
 * Redis time: commands sent by clients (FCALL's and EVALSHA's usec includes the commands its script runs;
 * those are also listed on their own in commandstats, so they are not added again), and the
 * per-command calls and usec, to see what a script does.
 */
const SCRIPT_INNER = /^(?!evalsha$|eval$|fcall$|info$)/;
async function redisStats(): Promise<Map<string, { calls: number; usec: number }>> {
  const info = await redis.info('commandstats');
  const stats = new Map<string, { calls: number; usec: number }>();
  for (const match of info.matchAll(/cmdstat_([\w|]+):calls=(\d+),usec=(\d+)/g))
    stats.set(match[1]!, { calls: Number(match[2]), usec: Number(match[3]) });
  return stats;
}

async function measure(name: string): Promise<{ node: number; redis: number }> {
  const path = PATHS[name]!;
  const prefix = `ojs-profile:${randomUUID()}`;
  const raw = new Queue('bench', { connection: redis, prefix });
  const queue = withUniqueness(raw);
  try {
    if (path.setup) await path.setup(queue);
    let i = 0;
    for (let w = 0; w < 500; w++) await path.add(queue, i++);
    const before = await redisStats();
    const cpu = process.cpuUsage();
    for (let n = 0; n < N; n++) await path.add(queue, i++);
    const used = process.cpuUsage(cpu);
    const after = await redisStats();
    let usec = 0;
    const inner: string[] = [];
    for (const [command, stat] of after) {
      const calls = stat.calls - (before.get(command)?.calls ?? 0);
      const spent = stat.usec - (before.get(command)?.usec ?? 0);
      if (calls === 0) continue;
      if (SCRIPT_INNER.test(command)) inner.push(`${command} ${(calls / N).toFixed(2)}×${(spent / calls).toFixed(2)}µs`);
      else if (command !== 'info') {
        usec += spent;
        inner.push(`[${command} ${(calls / N).toFixed(2)}]`);
      }
    }
    if (process.env.PROFILE_VERBOSE)
      console.error(`${name}: user ${(used.user / N).toFixed(1)} sys ${(used.system / N).toFixed(1)} ${inner.join(', ')}`);
    return { node: (used.user + used.system) / N, redis: usec / N };
  } finally {
    await raw.close();
    await unlinkPrefix(redis, prefix);
  }
}

const names = process.argv.slice(2).length > 0 ? process.argv.slice(2) : Object.keys(PATHS);
const results = new Map<string, { node: number[]; redis: number[] }>();
// One unrecorded pass first, as in bench/bullmq.ts: JIT warm-up would land on the first path.
for (const name of names) await measure(name);
for (let rep = 0; rep < REPS; rep++) {
  for (const name of names) {
    const r = await measure(name);
    const entry = results.get(name) ?? { node: [], redis: [] };
    entry.node.push(r.node);
    entry.redis.push(r.redis);
    results.set(name, entry);
  }
}
const med = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
console.log(`N=${N} reps=${REPS} (median) — µs per add`);
console.log('| path | Node CPU µs | Redis µs |');
console.log('|---|---|---|');
for (const [name, r] of results) console.log(`| ${name} | ${med(r.node).toFixed(1)} | ${med(r.redis).toFixed(1)} |`);
await redis.quit();
