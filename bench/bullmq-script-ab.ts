/**
 * Redis time of the unique-add script against another version of it, alternating in one
 * process so that load on a shared machine falls on both alike. The other version is the
 * composed script of another checkout of this repository (same KEYS/ARGV layout):
 *
 *   git worktree add /tmp/before <commit>   (or git archive <commit> | tar -x -C /tmp/before)
 *   npx tsx bench/bullmq-script-ab.ts /tmp/before
 *
 * For each path and round, each version runs on a fresh queue and connection: 1,000 warm-up
 * adds, then BENCH_N adds; the FCALL/EVALSHA usec per call from INFO commandstats. Median of 6 rounds.
 * This checkout's script runs as a function of its library (Redis >= 7), the other's as a script.
 */
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { OjsScript } from '../adapters/bullmq/bullmq-script-command.js';
import { composedScripts } from '../adapters/bullmq/bullmq-script-set.js';
import { withUniqueness, type UniqueQueue } from '../adapters/bullmq/index.js';
import { unlinkPrefix } from './bullmq-bench-keys.js';

const other = process.argv[2];
if (!other) throw new Error('usage: npx tsx bench/bullmq-script-ab.ts <other checkout>');
const N = Number(process.env.BENCH_N ?? 4000);
const ROUNDS = 6;
const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const redis = new Redis(url, { maxRetriesPerRequest: null });
const otherModule = (await import(pathToFileURL(resolve(other, 'adapters/bullmq/bullmq-script-set.ts')).href)) as {
  composedScripts: typeof composedScripts;
};
// The adapter runs composedScripts()[0]; the harness swaps it. This checkout's runs as the adapter
// runs it (a function of its library on Redis >= 7); the other's as a script (EVALSHA), as an
// adapter without function libraries ran it. BENCH_AB_SCRIPTS=1 runs both as scripts.
const scripts = composedScripts();
const current = scripts[0]!;
const useLua = (lua: string) => {
  scripts[0] =
    lua === current.lua && process.env.BENCH_AB_SCRIPTS !== '1' ? current : new OjsScript(current.command, current.numberOfKeys, lua);
};
const versions: [string, string][] = [
  ['other', otherModule.composedScripts()[0]!.lua],
  ['this', current.lua],
];

const PATHS: Record<string, (q: UniqueQueue, i: number) => Promise<unknown>> = {
  insert: (q, i) => q.add('job', { user_id: i }, { unique: { keys: ['type', 'args'] } }),
  reject: (q) =>
    q.add('job', { user_id: -1 }, { unique: { keys: ['type', 'args'] } }).catch((error: { code?: string }) => {
      if (error.code !== 'duplicate') throw error;
    }),
  ignore: (q) => q.add('job', { user_id: -2 }, { unique: { keys: ['type', 'args'], on_conflict: 'ignore' } }),
  replace: (q, i) => q.add('job', { user_id: -3, i }, { unique: { keys: ['type'], on_conflict: 'replace' } }),
};

/** Calls and usec of FCALL and EVALSHA together (either runs the script under test). */
async function evalshaStats(): Promise<[number, number]> {
  const info = await redis.info('commandstats');
  let calls = 0;
  let usec = 0;
  for (const match of info.matchAll(/cmdstat_(?:evalsha|fcall):calls=(\d+),usec=(\d+)/g)) {
    calls += Number(match[1]);
    usec += Number(match[2]);
  }
  return [calls, usec];
}

const results = new Map<string, number[]>();
for (let round = 0; round < ROUNDS; round++) {
  for (const [path, add] of Object.entries(PATHS)) {
    for (const [version, lua] of round % 2 === 0 ? versions : [...versions].reverse()) {
      const connection = new Redis(url, { maxRetriesPerRequest: null });
      useLua(lua);
      const prefix = `ojs-bench:${randomUUID()}`;
      const raw = new Queue('bench', { connection, prefix });
      const queue = withUniqueness(raw);
      let i = 0;
      for (; i < 1000; i++) await add(queue, i);
      const [calls0, usec0] = await evalshaStats();
      for (; i < 1000 + N; i++) await add(queue, i);
      const [calls1, usec1] = await evalshaStats();
      const key = `${path} (${version})`;
      results.set(key, [...(results.get(key) ?? []), (usec1 - usec0) / (calls1 - calls0)]);
      await raw.close();
      await connection.quit();
      await unlinkPrefix(redis, prefix);
    }
  }
}
useLua(versions[1]![1]);
const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
console.log(`FCALL/EVALSHA µs per add, median of ${ROUNDS} alternating rounds (N=${N}); other = ${other}`);
console.log('| path (version) | median | all rounds |');
console.log('|---|---|---|');
for (const [key, values] of results)
  console.log(`| ${key} | ${median(values).toFixed(1)} | ${values.map((v) => v.toFixed(1)).join(' ')} |`);
await redis.quit();
