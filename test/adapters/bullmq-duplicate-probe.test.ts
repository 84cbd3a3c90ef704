/**
 * The duplicate probe (lua/unique-probe-3.lua, bullmq-probe-hints.ts): a `reject`/`ignore` add of
 * a fingerprint the queue saw holding a job is first sent as a small script that answers a
 * duplicate exactly as the full unique-add would, and writes nothing otherwise. Which scripts ran
 * is read off the MONITOR stream of a redis-server the file starts itself (MONITOR is never sent to
 * the shared Redis: it sees every client's commands); the probe's answers are compared with the full add's on
 * a second queue that never probes. Real Redis, a real Worker.
 */
import { createHash } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { expect } from 'chai';
import { withUniqueness, type UniqueJob, type UniqueJobsOptions } from '../../adapters/bullmq/index.js';
import { COMMANDS, composedScripts } from '../../adapters/bullmq/bullmq-script-set.js';
import { DuplicateJobError, InvalidJobInputError, type UniquePolicyInput } from '../../src/index.js';
import { rejection } from '../conformance/suite-context.js';
import { seededRandom } from '../seeded-random.js';
import { startOwnRedis, type OwnRedis } from './bullmq-own-redis.js';
import { indexEntries, useRedisPrefix, type RedisTestContext } from './bullmq-test-redis.js';
import { replacedIds } from '../replaced-ids.js';

const FILE = 'bullmq-duplicate-probe.test.ts';

const sha = (command: string) =>
  createHash('sha1')
    .update(composedScripts().find((script) => script.command === command)!.lua)
    .digest('hex');

/** The adapter's scripts Redis runs for keys under `prefix`, in order ("add" / "probe"), read off MONITOR. */
async function watchScripts(ctx: RedisTestContext): Promise<{ seen(): Promise<string[]>; stop(): Promise<void> }> {
  const functionName = (command: string) => composedScripts().find((script) => script.command === command)!.functionName;
  const names = new Map([
    [sha(COMMANDS.uniqueAdd), 'add'],
    [sha(COMMANDS.uniqueNativeAdd), 'add'],
    [sha(COMMANDS.uniqueProbe), 'probe'],
    [functionName(COMMANDS.uniqueAdd), 'add'],
    [functionName(COMMANDS.uniqueNativeAdd), 'add'],
    [functionName(COMMANDS.uniqueProbe), 'probe'],
  ]);
  // Loaded first, so that no call meets "Function not found" and is sent again (seen twice).
  await ctx.redis.call('FUNCTION', 'LOAD', composedScripts()[0]!.library!.code).catch((error: Error) => {
    if (!/already exists/.test(error.message)) throw error;
  });
  const monitor = await (ctx.connect() as Redis).monitor();
  const seen: string[] = [];
  const markers = new Set<string>();
  const sync = async () => {
    const marker = `${ctx.prefix}:${Math.random()}`;
    await ctx.redis.echo(marker);
    for (let i = 0; i < 200 && !markers.has(marker); i++) await new Promise((resolve) => setTimeout(resolve, 10));
    if (!markers.has(marker)) throw new Error('MONITOR did not report the marker');
  };
  monitor.on('monitor', (_time: string, args: string[]) => {
    const command = String(args[0]).toLowerCase();
    if ((command === 'fcall' || command === 'evalsha' || command === 'eval') && String(args[3] ?? '').startsWith(`${ctx.prefix}:`)) {
      // A function (FCALL, Redis >= 7; unique-native-add is the add too), or the script: its first call on a connection as EVAL
      // (MONITOR escapes its text), then EVALSHA.
      const name =
        command !== 'eval' ? names.get(String(args[1])) : /^--\[\[\\n {2}unique-(?:native-)?(add|probe):/.exec(String(args[1]))?.[1];
      if (name) seen.push(name);
    }
    if (command === 'echo') markers.add(String(args[1]));
  });
  // MONITOR reports commands only once it is set up on the server: wait for a first marker.
  await sync();
  return {
    // Everything sent before the marker has been reported once the marker is.
    async seen() {
      await sync();
      return seen.splice(0);
    },
    async stop() {
      monitor.disconnect();
    },
  };
}

/**
 * A queue under its own sub-prefix of the test's: the probing and the non-probing side must not
 * share fingerprints (a policy without the `queue` dimension spans the queues of a prefix, §3.2).
 */
function sideQueue(ctx: RedisTestContext, side: string, name = 'q'): Queue {
  const queue = new Queue(name, { connection: ctx.redis, prefix: `${ctx.prefix}:${side}` });
  ctx.closeLater(queue);
  return queue;
}

async function completeNext(ctx: RedisTestContext, queue: Queue): Promise<void> {
  const worker = new Worker(queue.name, null, { connection: ctx.redis, prefix: queue.opts.prefix, autorun: false });
  const job = await worker.getNextJob('token', { block: false });
  if (!job) throw new Error(`no job to complete in ${queue.name}`);
  await job.moveToCompleted('done', 'token', false);
  await worker.close();
}

async function dedupEvents(ctx: RedisTestContext, queue: Queue): Promise<Record<string, string>[]> {
  const entries = await ctx.redis.xrange(`${queue.opts.prefix}:${queue.name}:events`, '-', '+');
  return entries
    .map(
      ([, fields]) =>
        Object.fromEntries(fields.flatMap((_, i) => (i % 2 === 0 ? [[fields[i], fields[i + 1]]] : []))) as Record<string, string>,
    )
    .filter((event) => event.event === 'deduplicated');
}

describe('bullmq adapter: the duplicate probe', function () {
  this.timeout(20_000);
  let server: OwnRedis | undefined;
  before(async function () {
    server = await startOwnRedis();
  });
  after(async function () {
    await server?.stop();
  });
  const ctx = useRedisPrefix(FILE, () => server!.url);

  it('§5 reject: a repeated duplicate is answered by the probe alone, with the error and event the full add gives', async function () {
    const scripts = await watchScripts(ctx);
    ctx.closeLater({ close: scripts.stop });
    const probing = withUniqueness(sideQueue(ctx, 'a'));
    const full = withUniqueness(sideQueue(ctx, 'b'), { duplicateProbe: false });
    const unique = { keys: ['type', 'args'] } as const;
    const errors: DuplicateJobError[] = [];
    for (const queue of [probing, full]) {
      const first = await queue.add('sync', { user: 1 }, { unique });
      for (let i = 0; i < 3; i++)
        errors.push((await rejection(queue.add('sync', { user: 1 }, { unique }))) as unknown as DuplicateJobError);
      expect(first.id).to.equal('1');
    }
    // The first duplicate sets the hint (the add that created the job sets none).
    expect(await scripts.seen()).to.deep.equal(['add', 'add', 'probe', 'probe', 'add', 'add', 'add', 'add']);
    for (const error of errors) {
      expect(error).to.be.instanceOf(DuplicateJobError);
      expect(error).to.include({ code: 'duplicate', existingJobId: '1', existingJobState: 'available', reason: 'duplicate' });
      expect(error.uniquenessKey).to.equal(errors[0]!.uniquenessKey);
    }
    const [viaProbe, viaAdd] = [await dedupEvents(ctx, probing.unwrapped), await dedupEvents(ctx, full.unwrapped)];
    expect(viaProbe).to.have.length(3);
    expect(viaProbe.map(({ jobId, deduplicationId, deduplicatedJobId }) => ({ jobId, deduplicationId, deduplicatedJobId }))).to.deep.equal(
      viaAdd.map(({ jobId, deduplicationId, deduplicatedJobId }) => ({ jobId, deduplicationId, deduplicatedJobId })),
    );
    expect(await probing.count()).to.equal(1);
  });

  it('§5 ignore: the probe returns the existing job (its data, not the new data), as the full add does', async function () {
    const scripts = await watchScripts(ctx);
    ctx.closeLater({ close: scripts.stop });
    const probing = withUniqueness(sideQueue(ctx, 'a'));
    const full = withUniqueness(sideQueue(ctx, 'b'), { duplicateProbe: false });
    const unique = { keys: ['type'], on_conflict: 'ignore' } as const;
    const answers: UniqueJob[] = [];
    for (const queue of [probing, full]) {
      await queue.add('digest', { v: 1 }, { unique, delay: 60_000 });
      await queue.add('digest', { v: 2 }, { unique });
      answers.push(await queue.add('digest', { v: 3 }, { unique }));
    }
    expect(await scripts.seen()).to.deep.equal(['add', 'add', 'probe', 'add', 'add', 'add']);
    const [viaProbe, viaAdd] = answers as [UniqueJob, UniqueJob];
    expect(viaProbe.unique).to.deep.equal(viaAdd.unique);
    expect(viaProbe.unique).to.include({ outcome: 'deduplicated', existingJobId: '1', existingJobState: 'scheduled' });
    expect(viaProbe.data).to.deep.equal({ v: 1 });
    expect({ id: viaProbe.id, name: viaProbe.name, data: viaProbe.data, opts: viaProbe.opts, delay: viaProbe.delay }).to.deep.equal({
      id: viaAdd.id,
      name: viaAdd.name,
      data: viaAdd.data,
      opts: viaAdd.opts,
      delay: viaAdd.delay,
    });
  });

  it('a probe that finds no duplicate writes nothing and the full add decides (the job completed; the default states do not count it)', async function () {
    const scripts = await watchScripts(ctx);
    ctx.closeLater({ close: scripts.stop });
    const queue = withUniqueness(ctx.queue('a'));
    const unique = { keys: ['type'] } as const;
    await queue.add('sync', {}, { unique });
    await rejection(queue.add('sync', {}, { unique }));
    await completeNext(ctx, queue.unwrapped);
    const second = await queue.add('sync', {}, { unique });
    expect(second.unique).to.include({ outcome: 'created' });
    expect(second.id).to.equal('2');
    // The miss dropped the hint; the next duplicate's full add sets it again, so the one after is probed.
    await rejection(queue.add('sync', {}, { unique }));
    await rejection(queue.add('sync', {}, { unique }));
    expect(await scripts.seen()).to.deep.equal(['add', 'add', 'probe', 'add', 'add', 'probe']);
  });

  it("a replace is never probed, and a probed add never writes when it misses (the index is the full add's alone)", async function () {
    const scripts = await watchScripts(ctx);
    ctx.closeLater({ close: scripts.stop });
    const queue = withUniqueness(ctx.queue('a'));
    await queue.add('r', {}, { unique: { on_conflict: 'replace' } });
    await queue.add('r', {}, { unique: { on_conflict: 'replace' } });
    expect(await scripts.seen()).to.deep.equal(['add', 'add']);

    // A hint for a key whose job was removed: the probe misses; the index is untouched until the
    // full add prunes the gone entry and inserts.
    // Not the default states: the general path, whose jobs have index entries (the native path's have none).
    const unique = { keys: ['type', 'queue'], states: ['available', 'active', 'scheduled', 'retryable'] } as const;
    const first = await queue.add('gone', {}, { unique });
    await rejection(queue.add('gone', {}, { unique }));
    await first.remove();
    const index = `${ctx.prefix}:a:ojs:index`;
    const before = await indexEntries(ctx.redis, index, first.unique!.uniquenessKey);
    const again = await queue.add('gone', {}, { unique });
    expect(again.unique).to.include({ outcome: 'created' });
    expect(await scripts.seen()).to.deep.equal(['add', 'add', 'probe', 'add']);
    expect(before.map((entry) => entry.id)).to.deep.equal([first.id]);
    const after = await indexEntries(ctx.redis, index, again.unique!.uniquenessKey);
    expect(after.map((entry) => entry.id)).to.deep.equal([again.id]);
  });

  it('a caller jobId already in use is refused by the probe exactly as by the full add (InvalidJobInputError on opts.jobId)', async function () {
    const queue = withUniqueness(ctx.queue('a'));
    const unique = { keys: ['type'] } as const;
    await queue.add('x', {}, { unique, jobId: 'mine' });
    const error = await rejection(queue.add('x', {}, { unique, jobId: 'mine' }));
    expect(error).to.be.instanceOf(InvalidJobInputError);
    expect((error as unknown as InvalidJobInputError).issues).to.deep.equal([
      { path: 'opts.jobId', message: 'a job with id mine already exists' },
    ]);
  });

  it("BullMQ's option checks run before the probe: an invalid option is refused, not answered as a duplicate", async function () {
    const queue = withUniqueness(ctx.queue('a'));
    const unique = { keys: ['type'] } as const;
    await queue.add('x', {}, { unique });
    const error = await rejection(queue.add('x', {}, { unique, priority: 1.5 } as UniqueJobsOptions));
    expect(error).not.to.be.instanceOf(DuplicateJobError);
    expect(String((error as Error).message)).to.match(/priority/i);
  });

  it('random sequences: probing and non-probing queues give the same outcomes, ids and states, step by step', async function () {
    this.timeout(60_000);
    const random = seededRandom(20261123);
    const queues: Queue[] = [sideQueue(ctx, 'a'), sideQueue(ctx, 'b')];
    const wrapped = [withUniqueness(queues[0]!), withUniqueness(queues[1]!, { duplicateProbe: false })];
    const policies: UniquePolicyInput[] = [
      { keys: ['type'] },
      { keys: ['type'], on_conflict: 'ignore' },
      { keys: ['type'], states: ['available', 'scheduled', 'active', 'retryable', 'pending', 'completed'] },
      { keys: ['type'], on_conflict: 'ignore', states: ['available', 'completed'] },
      { keys: ['type'], on_conflict: 'replace' },
    ];
    const transcript: string[][] = [[], []];
    for (let step = 0; step < 150; step++) {
      const op = random(10);
      const policyIndex = random(policies.length);
      const policy = policies[policyIndex]!;
      // A type is added with policies that all count `completed` or none that does: a finished job
      // no policy of its key counts is reclaimed by a random sweep, at a moment each side draws
      // for itself.
      const type = `${policyIndex === 2 || policyIndex === 3 ? 'w' : 't'}${random(3)}`;
      const delay = random(4) === 0 ? 60_000 : undefined;
      const pick = random(1000);
      for (const side of [0, 1]) {
        const queue = wrapped[side]!;
        let line: string;
        if (op < 7) {
          try {
            const job = await queue.add(type, { step }, { unique: policy, ...(delay ? { delay } : {}) });
            line = `add ${type} -> ${job.unique!.outcome} ${job.id} ${job.unique!.existingJobState ?? ''} ${replacedIds(job.unique).join(',')}`;
          } catch (error) {
            const duplicate = error as DuplicateJobError;
            line = `add ${type} -> ${duplicate.code} ${duplicate.existingJobId} ${duplicate.existingJobState}`;
          }
        } else if (op < 9) {
          const waiting = await queues[side]!.getWaiting();
          if (waiting.length === 0) line = 'complete: none';
          else {
            await completeNext(ctx, queues[side]!);
            line = 'complete';
          }
        } else {
          const jobs = await queues[side]!.getJobs(['wait', 'delayed', 'completed']);
          const ids = jobs.map((job) => job.id!).sort();
          const id = ids[pick % Math.max(ids.length, 1)];
          if (id === undefined) line = 'remove: none';
          else {
            await queues[side]!.remove(id);
            line = `remove ${id}`;
          }
        }
        transcript[side]!.push(`${step} ${line}`);
      }
      expect(transcript[0]!.at(-1), `step ${step}`).to.equal(transcript[1]!.at(-1));
    }
    const outcomes = transcript[0]!.join('\n');
    if (process.env.DEBUG_PROBE) console.log(outcomes);
    // The sequence exercised every answer the probe can give.
    expect(outcomes).to.match(/-> duplicate /);
    expect(outcomes).to.match(/-> deduplicated /);
    expect(outcomes).to.match(/-> created /);
    expect(outcomes).to.match(/complete\n/);
  });
});
