/**
 * Node CPU of one add without the network: a real ioredis client whose `sendCommand` encodes the
 * command (`toWritable`, as for the socket) and answers it with a canned reply. What remains is
 * the JavaScript an add costs (validation, key, BullMQ's job encoding, ioredis' command, decoding
 * the reply, the error of a reject), free of socket system time and of Redis competing for the
 * CPU, which make the Node figures of bench/bullmq-profile.ts vary widely on a shared machine.
 *
 *   npx tsx bench/bullmq-node-cost.ts
 *
 * Median of 5 recorded rounds (after one unrecorded) of BENCH_N adds per path, interleaved.
 * Redis is used only to open the queue and for one real unique add (registration, scripts).
 */
import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { withUniqueness } from '../adapters/bullmq/index.js';
import { unlinkPrefix } from './bullmq-bench-keys.js';

const N = Number(process.env.BENCH_N ?? 30_000);
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null });
const prefix = `ojs-bench:${randomUUID()}`;
const raw = new Queue('bench', { connection: redis, prefix });
const queue = withUniqueness(raw);
// The same queue without the duplicate probe: a duplicate then pays for the full unique-add.
const noProbe = withUniqueness(raw, { duplicateProbe: false });
await queue.add('job', { user_id: 0 }, { unique: { keys: ['type', 'args'] } });

let reply: () => unknown = () => null;
const realSend = redis.sendCommand;
const socket = {};
(redis as unknown as { sendCommand: unknown }).sendCommand = (command: {
  toWritable(s: object): unknown;
  resolve(v: unknown): void;
  promise: Promise<unknown>;
}) => {
  command.toWritable(socket);
  command.resolve(reply());
  return command.promise;
};

const now = 1_763_780_000_000;
const existingHash = [
  'name',
  'job',
  'data',
  '{"user_id":-1}',
  'opts',
  '{"attempts":1}',
  'timestamp',
  String(now),
  'delay',
  '0',
  'priority',
  '0',
  'atm',
  '0',
  'ats',
  '0',
  'ojsKey',
  'k',
  'ojsPolicy',
  '{"keys":["type","args"]}',
  'ojsMeta',
  '{}',
];
let id = 0;
let fresh = 0;
const unique = () => ({ keys: ['type', 'args'] }) as const;
const PATHS: Record<string, { reply: () => unknown; add: (i: number) => Promise<unknown> }> = {
  plain: { reply: () => String(++id), add: (i) => queue.add('job', { user_id: i }) },
  dedup: { reply: () => String(++id), add: (i) => queue.add('job', { user_id: i }, { deduplication: { id: `d${i}` } }) },
  // A fresh fingerprint every time (a hint for it never exists, so no probe is sent).
  insert: { reply: () => ['created', String(++id), now], add: () => queue.add('job', { user_id: ++fresh }, { unique: unique() }) },
  // The native path (BullMQ's deduplication key): a policy with the `queue` dimension.
  'native insert': {
    reply: () => ['created', String(++id), now, 'deid'],
    add: () => queue.add('job', { user_id: ++fresh }, { unique: { keys: ['type', 'queue', 'args'] } }),
  },
  // One fingerprint over and over: after the first add, answered by the probe (unique-probe).
  reject: {
    reply: () => ['duplicate', '1', 'available', 'bench', now],
    add: () =>
      queue.add('job', { user_id: -1 }, { unique: unique() }).catch((error: { code?: string }) => {
        if (error.code !== 'duplicate') throw error;
      }),
  },
  ignore: {
    reply: () => ['ignored', '1', 'available', 'bench', now, existingHash],
    add: () => queue.add('job', { user_id: -1 }, { unique: { ...unique(), on_conflict: 'ignore' } }),
  },
  'reject, no probe': {
    reply: () => ['duplicate', '1', 'available', 'bench', now],
    add: () =>
      noProbe.add('job', { user_id: -1 }, { unique: unique() }).catch((error: { code?: string }) => {
        if (error.code !== 'duplicate') throw error;
      }),
  },
  'ignore, no probe': {
    reply: () => ['ignored', '1', 'available', 'bench', now, existingHash],
    add: () => noProbe.add('job', { user_id: -1 }, { unique: { ...unique(), on_conflict: 'ignore' } }),
  },
};

// BENCH_PATHS=insert,reject runs only those paths (e.g. under --cpu-prof).
const only = process.env.BENCH_PATHS?.split(',');
const results = new Map<string, number[]>();
for (let round = 0; round < 6; round++) {
  for (const [name, path] of Object.entries(PATHS)) {
    if (only && !only.includes(name)) continue;
    reply = path.reply;
    for (let i = 0; i < 2000; i++) await path.add(i);
    const cpu = process.cpuUsage();
    for (let i = 0; i < N; i++) await path.add(i);
    const used = process.cpuUsage(cpu);
    if (round > 0) results.set(name, [...(results.get(name) ?? []), (used.user + used.system) / N]);
  }
}
(redis as unknown as { sendCommand: unknown }).sendCommand = realSend;
console.log(`Node CPU per add, no network (N=${N}, median of 5 rounds), Node ${process.version}`);
console.log('| path | µs | ×plain |');
console.log('|---|---|---|');
const median = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
const plain = median(results.get('plain') ?? [NaN]);
for (const [name, values] of results) console.log(`| ${name} | ${median(values).toFixed(1)} | ${(median(values) / plain).toFixed(2)} |`);
await raw.close();
await unlinkPrefix(redis, prefix);
await redis.quit();
