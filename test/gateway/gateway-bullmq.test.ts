/**
 * The BullMQ gateway store over HTTP, where BullMQ's own keys share the queue's prefix with its
 * jobs: ids and queue names that name BullMQ's keys, the connections fetch opens, discovery of
 * queues under the prefix, and the gateway's side records.
 */
import { expect } from 'chai';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { uuidv7 } from '../../src/uuid-v7.js';
import { REDIS_URL } from '../adapters/bullmq-test-redis.js';
import { startGateway, type TestGateway } from './gateway-test-server.js';

describe('gateway on BullMQ: its own keys and connections', function () {
  this.timeout(30_000);
  let gateway: TestGateway;
  let redis: Redis;
  before(async () => {
    gateway = await startGateway('bullmq', 'bullmq-keys');
    redis = new Redis(REDIS_URL);
  });
  after(async () => {
    await gateway?.close();
    await redis?.quit();
  });
  beforeEach(() => gateway.reset());
  const keysOf = (pattern: string) => redis.keys(`${gateway.names.prefix}:${pattern}`);

  it("GET and DELETE of an id naming one of BullMQ's keys (meta, events, ojs:index) are 404 and change nothing", async () => {
    const first = await gateway.request('POST', '/ojs/v1/jobs', {
      type: 'a',
      args: [1],
      unique: { keys: ['type'], on_conflict: 'reject' },
    });
    expect(first.status).to.equal(201);
    const before = await keysOf('*');
    for (const id of ['meta', 'events', 'id', 'ojs:index', `${first.body.job.id}:lock`]) {
      const path = `/ojs/v1/jobs/${encodeURIComponent(id)}`;
      expect((await gateway.request('GET', path)).status, `GET ${id}`).to.equal(404);
      expect((await gateway.request('DELETE', path)).status, `DELETE ${id}`).to.equal(404);
    }
    expect(await keysOf('*')).to.have.members(before);
    const again = await gateway.request('POST', '/ojs/v1/jobs', {
      type: 'a',
      args: [2],
      unique: { keys: ['type'], on_conflict: 'reject' },
    });
    expect(again.status).to.equal(409);
  });

  it('fetch and queue stats refuse a queue name PUSH would refuse (Q:1) as invalid_request, and fetch too many queues', async () => {
    for (const queues of [['Q:1'], ['default', 'a b'], Array.from({ length: 33 }, (_, i) => `q${i}`)]) {
      const reply = await gateway.request('POST', '/ojs/v1/workers/fetch', { queues });
      expect(reply.status, queues[0]).to.equal(400);
      expect(reply.body.error.code).to.equal('invalid_request');
    }
    const stats = await gateway.request('GET', '/ojs/v1/queues/Q:1/stats');
    expect(stats.status).to.equal(400);
    expect(stats.body.error.details).to.include({ field: 'name' });
  });

  it('fetch from many distinct queues keeps the connections it opens bounded', async () => {
    const named = async () =>
      String(await redis.call('CLIENT', 'LIST'))
        .split('\n')
        .filter((line) => line.includes(` name=${gateway.names.prefix}:`)).length;
    for (let i = 0; i < 40; i++) {
      const reply = await gateway.request('POST', '/ojs/v1/workers/fetch', { queues: [`spread-${i}`] });
      expect(reply.status).to.equal(200);
    }
    expect(await named()).to.be.at.most(20);
  });

  it("a nested prefix's queue (<prefix>:tenant1, queue jobs) is neither served nor reset: INFO of an unknown id is 404", async () => {
    const neighbour = new Queue('jobs', { connection: redis, prefix: `${gateway.names.prefix}:tenant1` });
    try {
      await neighbour.add('theirs', { n: 1 });
      const theirs = await keysOf('tenant1:*');
      expect(theirs).to.include(`${gateway.names.prefix}:tenant1:jobs:meta`);
      await gateway.request('POST', '/ojs/v1/jobs', { type: 'mine', args: [] });
      expect((await gateway.request('GET', `/ojs/v1/jobs/${uuidv7()}`)).status).to.equal(404);
      await gateway.reset();
      expect(await keysOf('tenant1:*')).to.have.members(theirs);
      expect(await keysOf('default:*')).to.deep.equal([]);
    } finally {
      await neighbour.obliterate({ force: true });
      await neighbour.close();
    }
  });

  it('the side record of a job is per field, and expires once the job ends through the gateway', async () => {
    const pushed = await gateway.request('POST', '/ojs/v1/jobs', { type: 'side', args: [], options: { tags: ['t1'] } });
    const id = pushed.body.job.id as string;
    const sideKey = `${gateway.names.prefix}:ojs-gateway:job:${id}`;
    expect(await redis.pttl(sideKey)).to.equal(-1);
    const [fetched] = (await gateway.request('POST', '/ojs/v1/workers/fetch', { queues: ['default'] })).body.jobs;
    expect(fetched).to.include({ id });
    expect(await redis.hkeys(sideKey)).to.include.members(['envelope', 'token', 'startedAt']);
    const ack = await gateway.request('POST', '/ojs/v1/workers/ack', { job_id: id });
    expect(ack.body).to.include({ state: 'completed' });
    expect(ack.body.job.tags).to.deep.equal(['t1']);
    expect(await redis.hkeys(sideKey)).to.not.include('token');
    expect(await redis.pttl(sideKey)).to.be.above(0);
    expect(await redis.exists(`${gateway.names.prefix}:ojs-gateway:jobs`)).to.equal(0);
  });

  it('fetch serves higher OJS priority first: 50, then 0 (given or not, in push order), then -5', async () => {
    const push = async (args: number[], priority?: number) =>
      (await gateway.request('POST', '/ojs/v1/jobs', { type: 'ranked', args, options: priority === undefined ? {} : { priority } })).body
        .job.id as string;
    const zero = await push([1], 0);
    const low = await push([2], -5);
    const none = await push([3]);
    const high = await push([4], 50);
    const fetched = (await gateway.request('POST', '/ojs/v1/workers/fetch', { queues: ['default'], count: 4 })).body.jobs;
    expect(fetched.map((job: { id: string }) => job.id)).to.deep.equal([high, zero, none, low]);
    expect(fetched.map((job: { priority: number }) => job.priority)).to.deep.equal([50, 0, 0, -5]);
  });
});
