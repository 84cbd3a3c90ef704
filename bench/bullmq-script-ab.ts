/**
 * Redis time of the unique-add script against another version of it, alternating in one
 * process so that load on a shared machine falls on both alike. The other version is the
 * composed script of another checkout of this repository (same KEYS/ARGV layout):
 *
 *   git worktree add /tmp/before <commit>   (or git archive <commit> | tar -x -C /tmp/before)
 *   npx tsx bench/bullmq-script-ab.ts /tmp/before
 *
 * For each path and round, each version runs on a fresh queue and connection: 1,000 warm-up
 * adds, then BENCH_N adds; the FCALL/EVALSHA usec per call from INFO commandstats. Median of
 * BENCH_ROUNDS rounds (6); BENCH_PATHS picks paths (comma-separated names of PATHS below).
 * BENCH_BLOCK=<n>: instead, one queue per version, blocks of n adds alternating between them, and
 * the median of the paired blocks' ratios (steadier on a loaded machine); also the server's CPU
 * time per add (INFO cpu), which a descheduled server does not inflate: use a redis-server of
 * your own for it.
 */
import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { OjsScript, OjsScriptLibrary } from '../adapters/bullmq/bullmq-script-command.js';
import { composedScripts } from '../adapters/bullmq/bullmq-script-set.js';
import { withUniqueness, type UniqueQueue } from '../adapters/bullmq/index.js';
import { unlinkPrefix } from './bullmq-bench-keys.js';

const other = process.argv[2];
if (!other) throw new Error('usage: npx tsx bench/bullmq-script-ab.ts <other checkout>');
const N = Number(process.env.BENCH_N ?? 4000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 6);
const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const redis = new Redis(url, { maxRetriesPerRequest: null });
const otherModule = (await import(pathToFileURL(resolve(other, 'adapters/bullmq/bullmq-script-set.ts')).href)) as {
  composedScripts: typeof composedScripts;
};
// The adapter runs composedScripts()[0] (unique-add) and the script named ojsUniqueProbe; the
// harness swaps both. Both versions run as the adapter runs them: functions of a library on
// Redis >= 7 (the other version's two in a library of their own). BENCH_AB_SCRIPTS=1 runs both as
// scripts (EVALSHA). Use a redis-server of your own (REDIS_URL): the other library stays loaded there.
const scripts = composedScripts();
const swapped = [0, scripts.findIndex((script) => script.command === 'ojsUniqueProbe')];
const currents = swapped.map((at) => scripts[at]!);
const others = swapped.map((at, i) => {
  const script = otherModule.composedScripts()[at]!;
  return new OjsScript(currents[i]!.command, currents[i]!.numberOfKeys, script.lua, script.mainAt, script.resent);
});
new OjsScriptLibrary(others);
const asScripts = process.env.BENCH_AB_SCRIPTS === '1';
const useVersion = (version: string) =>
  swapped.forEach((at, i) => {
    const chosen = version === 'this' ? currents[i]! : others[i]!;
    scripts[at] = asScripts ? new OjsScript(chosen.command, chosen.numberOfKeys, chosen.lua, 0, chosen.resent) : chosen;
  });
const versions = ['other', 'this'];

/** A policy the native path serves (bullmq-native-path.ts). */
const NATIVE = { keys: ['type', 'queue', 'args'] } as const;
const ALL_PATHS: Record<string, (q: UniqueQueue, i: number) => Promise<unknown>> = {
  insert: (q, i) => q.add('job', { user_id: i }, { unique: { keys: ['type', 'args'] } }),
  'native insert': (q, i) => q.add('job', { user_id: i }, { unique: NATIVE }),
  'native reject': (q) =>
    q.add('job', { user_id: -1 }, { unique: NATIVE }).catch((error: { code?: string }) => {
      if (error.code !== 'duplicate') throw error;
    }),
  'native ignore': (q) => q.add('job', { user_id: -2 }, { unique: { ...NATIVE, on_conflict: 'ignore' } }),
  reject: (q) =>
    q.add('job', { user_id: -1 }, { unique: { keys: ['type', 'args'] } }).catch((error: { code?: string }) => {
      if (error.code !== 'duplicate') throw error;
    }),
  ignore: (q) => q.add('job', { user_id: -2 }, { unique: { keys: ['type', 'args'], on_conflict: 'ignore' } }),
  replace: (q, i) => q.add('job', { user_id: -3, i }, { unique: { keys: ['type'], on_conflict: 'replace' } }),
};
// BENCH_PATHS: a comma-separated subset (e.g. 'native insert,native reject'); all by default.
const PATHS = process.env.BENCH_PATHS
  ? Object.fromEntries(process.env.BENCH_PATHS.split(',').map((name) => [name, ALL_PATHS[name]!]))
  : ALL_PATHS;

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

/** The redis-server's CPU seconds (user + system): unlike commandstats' wall time, not inflated
 * when a loaded machine deschedules it. Only meaningful on a server of the benchmark's own. */
async function serverCpu(): Promise<number> {
  const info = await redis.info('cpu');
  return Number(/used_cpu_user:([\d.]+)/.exec(info)![1]) + Number(/used_cpu_sys:([\d.]+)/.exec(info)![1]);
}

const results = new Map<string, number[]>();
const ratios = new Map<string, number[]>();
const cpuRatios = new Map<string, number[]>();
const cpuResults = new Map<string, number[]>();
const BLOCK = Number(process.env.BENCH_BLOCK ?? 0);
if (BLOCK > 0) {
  // Blocks of BLOCK adds alternate between the versions, each on its own queue, for N adds each:
  // load that comes and goes falls on both; each pair of blocks gives a ratio (this ÷ other).
  for (const [path, add] of Object.entries(PATHS)) {
    const sides = versions.map((version) => {
      const connection = new Redis(url, { maxRetriesPerRequest: null });
      const prefix = `ojs-bench:${randomUUID()}`;
      const raw = new Queue('bench', { connection, prefix });
      return { version, connection, prefix, raw, queue: withUniqueness(raw), i: 0 };
    });
    for (const side of sides) {
      useVersion(side.version);
      for (; side.i < 1000; side.i++) await add(side.queue, side.i);
    }
    for (let block = 0; block * BLOCK < N; block++) {
      const perAdd: Record<string, number> = {};
      const cpuPerAdd: Record<string, number> = {};
      for (const side of block % 2 === 0 ? sides : [...sides].reverse()) {
        useVersion(side.version);
        const cpu0 = await serverCpu();
        const [calls0, usec0] = await evalshaStats();
        for (const end = side.i + BLOCK; side.i < end; side.i++) await add(side.queue, side.i);
        const [calls1, usec1] = await evalshaStats();
        const cpu1 = await serverCpu();
        perAdd[side.version] = (usec1 - usec0) / (calls1 - calls0);
        cpuPerAdd[side.version] = ((cpu1 - cpu0) * 1e6) / BLOCK;
        const key = `${path} (${side.version})`;
        results.set(key, [...(results.get(key) ?? []), perAdd[side.version]!]);
        cpuResults.set(key, [...(cpuResults.get(key) ?? []), cpuPerAdd[side.version]!]);
      }
      ratios.set(path, [...(ratios.get(path) ?? []), perAdd.this! / perAdd.other!]);
      cpuRatios.set(path, [...(cpuRatios.get(path) ?? []), cpuPerAdd.this! / cpuPerAdd.other!]);
    }
    for (const side of sides) {
      await side.raw.close();
      await side.connection.quit();
      await unlinkPrefix(redis, side.prefix);
    }
  }
} else {
  for (let round = 0; round < ROUNDS; round++) {
    for (const [path, add] of Object.entries(PATHS)) {
      for (const version of round % 2 === 0 ? versions : [...versions].reverse()) {
        const connection = new Redis(url, { maxRetriesPerRequest: null });
        useVersion(version);
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
}
useVersion('this');
const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
const quartiles = (v: number[]) => {
  const sorted = [...v].sort((a, b) => a - b);
  return `${sorted[Math.floor(sorted.length / 4)]!.toFixed(2)}–${sorted[Math.floor((3 * sorted.length) / 4)]!.toFixed(2)}`;
};
if (BLOCK > 0) {
  console.log(`FCALL/EVALSHA µs per add, blocks of ${BLOCK} alternating (N=${N} each); other = ${other}`);
  console.log('| path (version) | median block | quartiles |');
  console.log('|---|---|---|');
  for (const [key, values] of results) console.log(`| ${key} | ${median(values).toFixed(1)} | ${quartiles(values)} |`);
  console.log('| path | this ÷ other, median of paired blocks | quartiles |');
  console.log('|---|---|---|');
  for (const [path, values] of ratios) console.log(`| ${path} | ${median(values).toFixed(3)} | ${quartiles(values)} |`);
  console.log('\nredis-server CPU µs per add (user + system, whole server: parsing and replies too)');
  console.log('| path (version) | median block | quartiles |');
  console.log('|---|---|---|');
  for (const [key, values] of cpuResults) console.log(`| ${key} | ${median(values).toFixed(1)} | ${quartiles(values)} |`);
  console.log('| path | this ÷ other, median of paired blocks | quartiles |');
  console.log('|---|---|---|');
  for (const [path, values] of cpuRatios) console.log(`| ${path} | ${median(values).toFixed(3)} | ${quartiles(values)} |`);
} else {
  console.log(`FCALL/EVALSHA µs per add, median of ${ROUNDS} alternating rounds (N=${N}); other = ${other}`);
  console.log('| path (version) | median | all rounds |');
  console.log('|---|---|---|');
  for (const [key, values] of results)
    console.log(`| ${key} | ${median(values).toFixed(1)} | ${values.map((v) => v.toFixed(1)).join(' ')} |`);
}
await redis.quit();
