/**
 * Duplicate counts on BullMQ (docs/decisions.md, "Duplicate counts"), beyond the conformance
 * section run on every backend: each path that answers a duplicate (the general path, the native
 * path, the probe) counts once per add, an add ioredis re-sends after a lost reply is not counted
 * again, a refused batch counts nothing, and `readUniqueFields` reads what bull-board cannot;
 * all with `countDuplicates` on. Off (the default), nothing is counted on any of those paths.
 */
import { Queue } from 'bullmq';
import { expect } from 'chai';
import { createBullMQBackend, readUniqueFields, withUniqueness } from '../../adapters/bullmq/index.js';
import { DuplicateJobError, parseUniquePolicy } from '../../src/index.js';
import { rejection } from '../conformance/suite-context.js';
import { redisTimeMs, useRedisPrefix } from './bullmq-test-redis.js';

const FILE = 'bullmq-duplicate-counts.test.ts';

const PATHS = {
  // The native path serves a policy BullMQ's deduplication key answers exactly (bullmq-native-path.ts).
  native: { keys: ['type', 'queue'], on_conflict: 'ignore' },
  general: { keys: ['type', 'queue'], period: 'PT1H', on_conflict: 'ignore' },
} as const;

describe('bullmq adapter: duplicate counts', function () {
  this.timeout(20_000);
  const ctx = useRedisPrefix(FILE);

  for (const [path, unique] of Object.entries(PATHS)) {
    it(`${path} path: add, probe and a re-sent add (lost reply): each duplicate counted once, the re-send not again`, async function () {
      const client = ctx.connect();
      const raw = new Queue('mail', { connection: client, prefix: ctx.prefix });
      ctx.closeLater(raw);
      const queue = withUniqueness(raw, { countDuplicates: true });
      await raw.waitUntilReady();
      // What ioredis would re-send after a reconnect: the same command, byte for byte.
      const sent: { name: string; args: unknown[] }[] = [];
      const send = client.sendCommand.bind(client);
      client.sendCommand = (command, stream) => {
        if (command.args.some((arg) => String(arg).endsWith(':mail:ojs:index'))) sent.push({ name: command.name, args: [...command.args] });
        return send(command, stream);
      };
      const before = await redisTimeMs(ctx.redis);
      const first = await queue.add('digest', { n: 1 }, { unique });
      expect(await readUniqueFields(raw, first)).to.deep.equal({
        unique: parseUniquePolicy(unique),
        uniqueness_key: first.unique!.uniquenessKey,
        duplicate_count: 0,
      });
      // The second is a full unique-add; the third, its key met as a duplicate just now, a probe.
      for (const n of [2, 3]) expect((await queue.add('digest', { n }, { unique })).unique!.outcome).to.equal('deduplicated');
      client.sendCommand = send;
      // (A script's first run may be sent twice: EVALSHA, then EVAL after NOSCRIPT.)
      const last = sent.at(-1)!;
      expect(last.args.length, 'the third add was the probe, the shorter command').to.be.below(sent[0]!.args.length);
      const counted = (await readUniqueFields(raw, first.id!))!;
      expect(counted.duplicate_count).to.equal(2);
      expect(Date.parse(counted.last_duplicate_at!)).to.be.at.least(before);
      // The last add written again: its token is the one counted last.
      const reply = (await client.call(last.name, ...(last.args as string[]))) as unknown[];
      expect(reply.slice(0, 2)).to.deep.equal(['ignored', first.id]);
      expect(await readUniqueFields(raw, first.id!)).to.deep.equal(counted);
      // The OJS view reads the same fields.
      const backend = createBullMQBackend({ connection: ctx.redis, prefix: ctx.prefix });
      ctx.closeLater(backend);
      expect(await backend.getJob(first.id!)).to.include({ duplicate_count: 2, last_duplicate_at: counted.last_duplicate_at });
      expect(await backend.findUniqueJob({ type: 'digest', queue: 'mail', args: { n: 1 }, unique })).to.include({
        id: first.id,
        duplicate_count: 2,
      });
    });
  }

  it('enqueueMany: a duplicate in a batch counts; a batch refused by a reject counts nothing', async function () {
    const backend = createBullMQBackend({ connection: ctx.redis, prefix: ctx.prefix, countDuplicates: true });
    ctx.closeLater(backend);
    const unique = { keys: ['type', 'args'], on_conflict: 'ignore' } as const;
    const stored = await backend.enqueue({ type: 'sync', args: { a: 1 }, unique });
    const [again, other] = await backend.enqueueMany([
      { type: 'sync', args: { a: 1 }, unique },
      { type: 'sync', args: { a: 2 }, unique },
    ]);
    expect(again!.job).to.include({ id: stored.job.id, duplicate_count: 1 });
    expect(other!.outcome).to.equal('created');
    const error = await rejection(
      backend.enqueueMany([
        { type: 'sync', args: { a: 1 }, unique },
        { type: 'sync', args: { a: 2 }, unique: { ...unique, on_conflict: 'reject' } },
      ]),
    );
    expect(error).to.be.instanceOf(DuplicateJobError);
    expect((await backend.getJob(stored.job.id))!.duplicate_count).to.equal(1);
    expect((await backend.getJob(other!.job.id))!.duplicate_count).to.equal(undefined);
  });

  it('countDuplicates off (the default): no path counts (add, probe, native, reject, the backend), no ojsDup field, neither view field', async function () {
    const raw = ctx.queue('quiet');
    const queue = withUniqueness(raw);
    const backend = createBullMQBackend({ connection: ctx.redis, prefix: ctx.prefix });
    ctx.closeLater(backend);
    const ids: string[] = [];
    for (const unique of [...Object.values(PATHS), { keys: ['type', 'queue'], on_conflict: 'reject' } as const]) {
      const name = `off-${ids.length}`;
      const first = await queue.add(name, {}, { unique });
      ids.push(first.id!);
      // The second a full unique-add, the third a probe (its key met as a duplicate just now).
      for (const n of [2, 3]) {
        if (unique.on_conflict === 'reject') await rejection(queue.add(name, { n }, { unique }));
        else expect((await queue.add(name, { n }, { unique })).unique!.outcome).to.equal('deduplicated');
      }
    }
    const viaBackend = await backend.enqueue({ type: 'sync', queue: 'quiet', args: {}, unique: { keys: ['type'], on_conflict: 'ignore' } });
    const again = await backend.enqueue({ type: 'sync', queue: 'quiet', args: {}, unique: { keys: ['type'], on_conflict: 'ignore' } });
    expect(again.job.id).to.equal(viaBackend.job.id);
    expect(again.job).to.not.have.any.keys('duplicate_count', 'last_duplicate_at');
    ids.push(viaBackend.job.id);
    for (const id of ids) {
      expect(await ctx.redis.hexists(raw.toKey(id), 'ojsDup'), id).to.equal(0);
      expect((await readUniqueFields(raw, id))!.duplicate_count).to.equal(0);
      expect(await backend.getJob(id)).to.not.have.any.keys('duplicate_count', 'last_duplicate_at');
    }
  });

  it('readUniqueFields: null for a plain job and for an id that names no job', async function () {
    const raw = ctx.queue('mail');
    const plain = await raw.add('plain', {});
    expect(await readUniqueFields(raw, plain)).to.equal(null);
    expect(await readUniqueFields(raw, 'no-such-job')).to.equal(null);
  });
});
