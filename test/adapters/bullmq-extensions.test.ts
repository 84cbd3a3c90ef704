/**
 * The policy extensions on BullMQ, beyond the reference rows (test/expressiveness): what
 * `x_update` writes in BullMQ's keys and what it leaves alone (a worker's lock, the attempts
 * made), how it meets a worker fetching the job, what `last_duplicate` stores (on the probe path
 * too) and how the index keeps an anchored window, and that an `x_key` never reaches a key name,
 * the index or any field but the stored policy.
 *
 * Windows are short periods waited out on Redis' clock: a job's created_at is Redis TIME in the
 * index, which a test cannot move without rewriting the entry.
 */
import { createRequire } from 'node:module';
import { Worker } from 'bullmq';
import { expect } from 'chai';
import { createBullMQBackend, withUniqueness, type BullMQBackend } from '../../adapters/bullmq/index.js';
import { installedBullMQ } from '../../adapters/bullmq/bullmq-host.js';
import { isDuplicateJobError, type EnqueueResult } from '../../src/index.js';
import { rejection } from '../conformance/suite-context.js';
import { redisTimeMs, useRedisPrefix } from './bullmq-test-redis.js';

const { unpack } = createRequire(`${installedBullMQ().root}/package.json`)('msgpackr') as { unpack(buffer: Buffer): unknown };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until Redis' clock has passed `ms`. */
async function untilRedisTime(redis: import('ioredis').Redis, ms: number): Promise<void> {
  for (;;) {
    const now = await redisTimeMs(redis);
    if (now > ms) return;
    await sleep(Math.min(ms - now + 5, 200));
  }
}

describe('bullmq adapter: policy extensions', function () {
  this.timeout(30_000);
  const ctx = useRedisPrefix('bullmq-extensions.test.ts');
  let backend: BullMQBackend;
  beforeEach(function () {
    backend = createBullMQBackend({ connection: ctx.redis, prefix: ctx.prefix });
    ctx.closeLater(backend);
  });
  const base = (queue = 'default') => `${ctx.prefix}:${queue}:`;
  const worker = (queue = 'default') => {
    const w = new Worker(queue, null, { connection: ctx.connect(), prefix: ctx.prefix, autorun: false });
    ctx.closeLater(w);
    return w;
  };
  const updated = (result: EnqueueResult) => {
    expect(result.outcome).to.equal('updated');
    return result as Extract<EnqueueResult, { outcome: 'updated' }>;
  };

  it("x_update moves a job of another queue (a policy without queue) in that queue's own lists: made due now, given a priority", async function () {
    const unique = {
      keys: ['type'],
      states: ['scheduled', 'available'],
      on_conflict: 'ignore',
      x_update: { scheduled: ['priority', 'scheduled_at'] },
    } as const;
    const first = await backend.enqueue({ type: 'cross', args: {}, queue: 'a', scheduled_at: '2099-01-01T00:00:00Z', unique });
    const moved = updated(await backend.enqueue({ type: 'cross', args: {}, queue: 'b', priority: 7, unique }));
    expect(moved.changed).to.deep.equal(['priority', 'scheduled_at']);
    expect(moved.job).to.deep.include({ id: first.job.id, queue: 'a', state: 'available' });
    expect(await ctx.redis.zscore(`${base('a')}delayed`, first.job.id)).to.equal(null);
    expect(await ctx.redis.zscore(`${base('a')}prioritized`, first.job.id)).to.not.equal(null);
    expect(await ctx.redis.exists(`${base('b')}delayed`, `${base('b')}prioritized`)).to.equal(0);
  });

  it('declares every extension, on the backend and through withUniqueness', async function () {
    expect(backend.capabilities.unique_jobs.extensions).to.deep.equal([
      'x_period_anchor',
      'x_key',
      'x_update',
      'x_max_wait',
      'x_successor',
    ]);
    const queue = withUniqueness(ctx.queue('wrapped'));
    const unique = { keys: [], x_key: 'k', period: 'PT1M', x_period_anchor: 'last_duplicate', x_update: { available: ['args'] } } as const;
    const first = await queue.add('a', { n: 1 }, { unique });
    const second = await queue.add('a', { n: 2 }, { unique });
    expect(second.unique).to.deep.include({ outcome: 'updated', existingJobId: first.id, changed: ['args'] });
    expect(second.id).to.equal(first.id);
    expect(second.data).to.deep.equal({ n: 2 });
  });

  describe('x_update', function () {
    it('on a waiting job: same id and created_at, data replaced, a new priority moves it to prioritized, only changed fields reported', async function () {
      const unique = { keys: ['type'], x_update: { available: ['args', 'meta', 'priority', 'max_attempts'] } } as const;
      const first = await backend.enqueue({ type: 't', args: { n: 1, list: [1, 2] }, unique });
      expect(await ctx.redis.lpos(`${base()}wait`, first.job.id)).to.be.a('number');
      const same = updated(await backend.enqueue({ type: 't', args: { n: 1, list: [1, 2] }, unique }));
      expect(same.changed).to.deep.equal([]);
      const moved = updated(
        await backend.enqueue({ type: 't', args: { list: [3] }, priority: 5, max_attempts: 4, meta: { m: 1 }, unique }),
      );
      expect(moved.changed).to.deep.equal(['args', 'meta', 'priority', 'max_attempts']);
      expect(moved.job).to.deep.include({
        id: first.job.id,
        created_at: first.job.created_at,
        state: 'available',
        priority: 5,
        max_attempts: 4,
      });
      expect(moved.job.args).to.deep.equal({ list: [3] });
      expect(moved.job.meta).to.deep.equal({ m: 1 });
      expect(await ctx.redis.lpos(`${base()}wait`, first.job.id)).to.equal(null);
      expect(await ctx.redis.zscore(`${base()}prioritized`, first.job.id)).to.not.equal(null);
      expect(await backend.queue().count()).to.equal(1);
      // A worker takes the updated job, with its new values.
      const taken = (await worker().getNextJob('token', { block: false }))!;
      expect(taken.id).to.equal(first.job.id);
      expect(taken.data).to.deep.equal({ list: [3] });
      expect(taken.opts.attempts).to.equal(4);
    });

    it('scheduled_at: a waiting job given a future time becomes delayed under its id; a scheduled job given none becomes due now', async function () {
      const unique = { keys: ['type'], x_update: { available: ['scheduled_at'], scheduled: ['scheduled_at'] } } as const;
      const first = await backend.enqueue({ type: 't', args: {}, unique });
      const later = new Date(Date.now() + 60_000);
      const delayed = updated(await backend.enqueue({ type: 't', args: {}, scheduled_at: later, unique }));
      expect(delayed.changed).to.deep.equal(['scheduled_at']);
      expect(delayed.job).to.deep.include({ id: first.job.id, state: 'scheduled' });
      expect(Math.abs(Date.parse(delayed.job.scheduled_at) - later.getTime())).to.be.below(5_000);
      expect(await ctx.redis.zscore(`${base()}delayed`, first.job.id)).to.not.equal(null);
      expect(await ctx.redis.lpos(`${base()}wait`, first.job.id)).to.equal(null);
      const read = (await backend.getJob(first.job.id))!;
      expect(read.scheduled_at).to.equal(delayed.job.scheduled_at);
      const now = updated(await backend.enqueue({ type: 't', args: {}, unique }));
      expect(now.changed).to.deep.equal(['scheduled_at']);
      expect(now.job).to.deep.include({ id: first.job.id, state: 'available' });
      expect(await ctx.redis.zscore(`${base()}delayed`, first.job.id)).to.equal(null);
      expect(await ctx.redis.lpos(`${base()}wait`, first.job.id)).to.be.a('number');
      expect(await backend.queue().getJobCounts('wait', 'delayed', 'prioritized')).to.deep.equal({ wait: 1, delayed: 0, prioritized: 0 });
    });

    it('on an active job: stored values only, never the lock, the active list or the attempts made; the attempt completes', async function () {
      const unique = { keys: ['type'], x_update: { active: ['args', 'priority', 'max_attempts', 'scheduled_at'] } } as const;
      const first = await backend.enqueue({ type: 't', args: { v: 'old' }, unique });
      const w = worker();
      const taken = (await w.getNextJob('token', { block: false }))!;
      const lock = await ctx.redis.get(`${base()}${first.job.id}:lock`);
      const attemptsMade = await ctx.redis.hget(`${base()}${first.job.id}`, 'atm');
      const result = updated(
        await backend.enqueue({
          type: 't',
          args: { v: 'new' },
          priority: 3,
          max_attempts: 7,
          scheduled_at: new Date(Date.now() + 60_000),
          unique,
        }),
      );
      expect(result.changed).to.deep.equal(['args', 'priority', 'max_attempts', 'scheduled_at']);
      expect(result.job).to.deep.include({ id: first.job.id, state: 'active', priority: 3, max_attempts: 7 });
      expect(await ctx.redis.get(`${base()}${first.job.id}:lock`)).to.equal(lock);
      expect(await ctx.redis.hget(`${base()}${first.job.id}`, 'atm')).to.equal(attemptsMade);
      expect(await ctx.redis.lrange(`${base()}active`, 0, -1)).to.deep.equal([first.job.id]);
      expect(await ctx.redis.zcard(`${base()}delayed`)).to.equal(0);
      expect(await ctx.redis.zcard(`${base()}prioritized`)).to.equal(0);
      expect(taken.data).to.deep.equal({ v: 'old' });
      await taken.moveToCompleted('done', 'token', false);
      expect((await backend.getJob(first.job.id))?.state).to.equal('completed');
    });

    it('on an active job without an `active` entry: on_conflict decides (ignore), nothing is written', async function () {
      const unique = { keys: ['type'], on_conflict: 'ignore', x_update: { available: ['args'] } } as const;
      const first = await backend.enqueue({ type: 't', args: { v: 'old' }, unique });
      await worker().getNextJob('token', { block: false });
      const result = await backend.enqueue({ type: 't', args: { v: 'new' }, unique });
      expect(result.outcome).to.equal('deduplicated');
      expect(result.job.args).to.deep.equal({ v: 'old' });
      expect((await backend.getJob(first.job.id))?.args).to.deep.equal({ v: 'old' });
    });

    it('on a retryable job: the new time becomes the retry time, the attempts made stay', async function () {
      const unique = { keys: ['type'], x_update: { retryable: ['scheduled_at'] } } as const;
      const first = await backend.enqueue({ type: 't', args: {}, max_attempts: 3, unique });
      const w = worker();
      const taken = (await w.getNextJob('token', { block: false }))!;
      await taken.moveToFailed(new Error('boom'), 'token', false);
      // BullMQ's backoff (1 s by default here) put it in delayed with one attempt made.
      expect((await backend.getJob(first.job.id))?.state).to.equal('retryable');
      const later = new Date(Date.now() + 120_000);
      const result = updated(await backend.enqueue({ type: 't', args: {}, scheduled_at: later, unique }));
      expect(result.changed).to.deep.equal(['scheduled_at']);
      expect(result.job).to.deep.include({ id: first.job.id, state: 'retryable', attempt: 1 });
      const score = Number(await ctx.redis.zscore(`${base()}delayed`, first.job.id));
      expect(Math.abs(Math.floor(score / 4096) - later.getTime())).to.be.below(5_000);
    });

    it('30 concurrent adds of one key: one created, 29 updated in place, one job holding one of their payloads', async function () {
      const unique = { keys: ['type'], x_update: { available: ['args'] } } as const;
      const producers = Array.from({ length: 3 }, () => createBullMQBackend({ connection: ctx.connect(), prefix: ctx.prefix }));
      producers.forEach((p) => ctx.closeLater(p));
      const results = await Promise.all(
        Array.from({ length: 30 }, (_, n) => producers[n % producers.length]!.enqueue({ type: 't', args: { n }, unique })),
      );
      const created = results.filter((r) => r.outcome === 'created');
      expect(created).to.have.length(1);
      expect(results.filter((r) => r.outcome === 'updated')).to.have.length(29);
      expect(new Set(results.map((r) => r.job.id))).to.deep.equal(new Set([created[0]!.job.id]));
      expect(await backend.queue().count()).to.equal(1);
      const stored = (await backend.getJob(created[0]!.job.id))!;
      expect((stored.args as { n: number }).n).to.be.within(0, 29);
    });

    it('meets a worker fetching the job: either the worker runs the updated data, or it took the job first and the update changes stored values only', async function () {
      const unique = { keys: ['type'], x_update: { available: ['args'], active: ['args'] } } as const;
      for (let round = 0; round < 10; round++) {
        const type = `race-${round}`;
        const first = await backend.enqueue({ type, args: { v: 'old' }, unique: { ...unique } });
        const w = worker();
        const [taken, result] = await Promise.all([
          w.getNextJob(`token-${round}`, { block: false }),
          backend.enqueue({ type, args: { v: 'new' }, unique }),
        ]);
        const answer = updated(result);
        expect(taken!.id).to.equal(first.job.id);
        expect(answer.job.id).to.equal(first.job.id);
        // The script ran either before the fetch (the worker got the new data) or after it (active, old data in hand).
        if (answer.job.state === 'active') expect(taken!.data).to.deep.equal({ v: 'old' });
        else expect([answer.job.state, taken!.data]).to.deep.equal(['available', { v: 'new' }]);
        expect((await backend.getJob(first.job.id))?.args).to.deep.equal({ v: 'new' });
        await taken!.moveToCompleted('done', `token-${round}`, false);
        await w.close();
      }
    });
  });

  describe('x_period_anchor', function () {
    it('last_duplicate: a rejected duplicate records its attempt (ojsLast, also when the probe answers) and the window runs from it', async function () {
      const unique = { keys: ['type'], period: 'PT2S', x_period_anchor: 'last_duplicate' } as const;
      const first = await backend.enqueue({ type: 't', args: {}, unique });
      const jobKey = `${base()}${first.job.id}`;
      expect(await ctx.redis.hget(jobKey, 'ojsLast')).to.equal(null);
      const created = Date.parse(first.job.created_at);
      const attempts: number[] = [];
      // Three rejects a second apart: the second and third go through unique-probe (the hint of the first).
      for (let i = 1; i <= 3; i++) {
        await untilRedisTime(ctx.redis, created + i * 1_000);
        const error = await rejection(backend.enqueue({ type: 't', args: {}, unique }));
        expect(isDuplicateJobError(error) && error.existingJobId).to.equal(first.job.id);
        attempts.push(Number(await ctx.redis.hget(jobKey, 'ojsLast')));
      }
      expect(attempts[0]).to.be.at.least(created + 1_000);
      expect(attempts[1]).to.be.above(attempts[0]!);
      expect(attempts[2]).to.be.above(attempts[1]!);
      // Past created_at + 2 s (the third reject was at +3 s): the window ran from the last attempt.
      await untilRedisTime(ctx.redis, attempts[2]! + 2_050);
      expect((await backend.enqueue({ type: 't', args: {}, unique })).outcome).to.equal('created');
    });

    it('last_duplicate under ignore: the answer is the existing job, and the index entry keeps the moved window for a finished job', async function () {
      const unique = {
        keys: ['type'],
        states: ['available', 'active', 'completed'],
        period: 'PT2S',
        x_period_anchor: 'last_duplicate',
        on_conflict: 'ignore',
      } as const;
      const first = await backend.enqueue({ type: 't', args: {}, unique });
      const taken = (await worker().getNextJob('token', { block: false }))!;
      await taken.moveToCompleted('done', 'token', false);
      const created = Date.parse(first.job.created_at);
      await untilRedisTime(ctx.redis, created + 1_500);
      const again = await backend.enqueue({ type: 't', args: {}, unique });
      expect(again).to.deep.include({ outcome: 'deduplicated' });
      expect(again.job).to.deep.include({ id: first.job.id, state: 'completed' });
      const last = Number(await ctx.redis.hget(`${base()}${first.job.id}`, 'ojsLast'));
      expect(last).to.be.at.least(created + 1_500);
      // The entry (the prefix's index: no `queue` dimension; field = the key's first 32 hex digits): bit 8 (anchored) and a period end from the last attempt.
      const packed = await ctx.redis.hgetBuffer(`${ctx.prefix}:ojs:global:index`, first.job.uniqueness_key!.slice(0, 32));
      const [, , id, bits, periodEnd] = unpack(packed!) as [number, string, string, number, number];
      expect(id).to.equal(first.job.id);
      expect(bits & 8).to.equal(8);
      expect(periodEnd).to.be.at.least(last + 2_000);
      expect(await ctx.redis.hget(`${base()}${first.job.id}`, 'ojsPeriod')).to.equal('l,0,0,2000');
      // Still a duplicate past created_at + 2 s: its window runs from the last attempt.
      await untilRedisTime(ctx.redis, created + 2_300);
      expect((await backend.enqueue({ type: 't', args: {}, unique })).job.id).to.equal(first.job.id);
    });

    it('reclaim: the sweep keeps a finished job while its last_duplicate window is open, and drops it after', async function () {
      const unique = {
        keys: ['type'],
        states: ['completed'],
        period: 'PT2S',
        x_period_anchor: 'last_duplicate',
        on_conflict: 'ignore',
      } as const;
      const first = await backend.enqueue({ type: 't', args: {}, unique });
      await (await worker().getNextJob('token', { block: false }))!.moveToCompleted('done', 'token', false);
      const index = `${ctx.prefix}:ojs:global:index`;
      const field = first.job.uniqueness_key!.slice(0, 32);
      await untilRedisTime(ctx.redis, Date.parse(first.job.created_at) + 1_500);
      expect((await backend.enqueue({ type: 't', args: {}, unique })).job.id).to.equal(first.job.id);
      const last = Number(await ctx.redis.hget(`${base()}${first.job.id}`, 'ojsLast'));
      // Inserts of one other key (replacing each other) sweep the index: fields drawn per insert, of the two there.
      const sweep = async (round: string) => {
        for (let i = 0; i < 20; i++)
          await backend.enqueue({ type: 'other', args: { round }, unique: { keys: ['type'], on_conflict: 'replace' } });
      };
      await untilRedisTime(ctx.redis, Date.parse(first.job.created_at) + 2_100);
      await sweep('open');
      expect(await ctx.redis.hexists(index, field), 'kept past created_at + period').to.equal(1);
      await untilRedisTime(ctx.redis, last + 2_050);
      // Past the replay grace too (a finished job's entry is kept that long whatever the policies).
      await ctx.redis.hset(`${base()}${first.job.id}`, 'finishedOn', last - 3_600_000);
      await sweep('closed');
      expect(await ctx.redis.hexists(index, field), 'dropped once last attempt + period has passed').to.equal(0);
    });

    it('scheduled_at: the window runs from the due time (delayed score), not the creation', async function () {
      const unique = { keys: ['type'], period: 'PT1S', x_period_anchor: 'scheduled_at' } as const;
      const first = await backend.enqueue({ type: 't', args: {}, scheduled_at: new Date(Date.now() + 3_000), unique });
      expect(await ctx.redis.hget(`${base()}${first.job.id}`, 'ojsPeriod')).to.equal('s,0,0,1000');
      await untilRedisTime(ctx.redis, Date.parse(first.job.created_at) + 1_500);
      const error = await rejection(backend.enqueue({ type: 't', args: {}, unique }));
      expect(isDuplicateJobError(error) && error.existingJobId).to.equal(first.job.id);
      // The same policy anchored at created_at (the spec's) finds no duplicate any more.
      expect((await backend.enqueue({ type: 't', args: {}, unique: { keys: ['type'], period: 'PT1S' } })).outcome).to.equal('created');
    });
  });

  describe('x_key', function () {
    it('shares one key across types and queues, and the raw key reaches no key name, index or field but the stored policy', async function () {
      const raw = 'customer-4711:welcome-mail';
      const first = await backend.enqueue({ type: 'mail.a', args: { n: 1 }, unique: { x_key: raw, on_conflict: 'ignore' } });
      const other = await backend.enqueue({
        type: 'mail.b',
        queue: 'other',
        args: { n: 2 },
        unique: { x_key: raw, on_conflict: 'ignore' },
      });
      expect(other).to.deep.include({ outcome: 'deduplicated' });
      expect(other.job.id).to.equal(first.job.id);
      expect(first.job.uniqueness_key).to.match(/^[0-9a-f]{64}$/);
      // keys: [] has no `queue` dimension: the prefix's index, not the queue's.
      expect(await ctx.redis.exists(`${ctx.prefix}:ojs:global:index`)).to.equal(1);
      expect(await ctx.redis.exists(`${ctx.prefix}:default:ojs:index`)).to.equal(0);
      const found: string[] = [];
      let cursor = '0';
      do {
        const [next, keys] = await ctx.redis.scan(cursor, 'MATCH', `${ctx.prefix}:*`, 'COUNT', 1000);
        cursor = next;
        for (const key of keys) {
          if (key.includes(raw)) found.push(`key name ${key}`);
          const type = await ctx.redis.type(key);
          if (type === 'hash') {
            const hash = await ctx.redis.hgetallBuffer(key);
            for (const [field, value] of Object.entries(hash))
              if (field !== 'ojsPolicy' && (field.includes(raw) || value.includes(raw))) found.push(`${key} ${field}`);
          } else if (type === 'stream') {
            for (const [, fields] of await ctx.redis.xrange(key, '-', '+')) if (fields.join(' ').includes(raw)) found.push(`stream ${key}`);
          }
        }
      } while (cursor !== '0');
      expect(found).to.deep.equal([]);
      expect(JSON.parse((await ctx.redis.hget(`${base()}${first.job.id}`, 'ojsPolicy'))!)).to.deep.include({ x_key: raw });
    });
  });
});
