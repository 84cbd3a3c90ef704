/**
 * A PUSH on BullMQ whose outcome is unknown: the Redis command timed out after it was sent. The
 * add may have run (it does, once Redis answers again), so the answer is 503 with
 * `details.written: "unknown"` and `retryable: false`, unless the request carried an
 * Idempotency-Key: then `retryable: true`, and a retry with the key ends with exactly one job.
 * A redis-server of the test's own, paused with SIGSTOP (a hung server) or reached through a proxy
 * that loses the replies from the add on (the add itself ran).
 */
import { expect } from 'chai';
import type { FastifyInstance } from 'fastify';
import { RUN_SALT } from '../run-salt.js';
import { startOwnRedis, type OwnRedis } from '../adapters/bullmq-own-redis.js';
import { createBullmqGatewayStore } from '../../server/bullmq-gateway-store.js';
import { createOjsServer } from '../../server/ojs-server.js';
import { startReplyHoldingProxy, type ReplyHoldingProxy } from './reply-holding-proxy.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Reply {
  status: number;
  headers: Headers;
  body: any;
}

describe('gateway on BullMQ: a PUSH whose write may have happened', function () {
  this.timeout(60_000);
  let redis: OwnRedis;
  let proxy: ReplyHoldingProxy | undefined;
  let app: FastifyInstance;
  let baseUrl: string;

  async function open(redisUrl: string): Promise<void> {
    const store = createBullmqGatewayStore({ redisUrl, prefix: `ojs-test:${RUN_SALT}:gateway-outage`, commandTimeoutMs: 1000 });
    app = await createOjsServer({ store });
    baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  }

  beforeEach(async () => {
    redis = await startOwnRedis();
    proxy = undefined;
  });
  afterEach(async () => {
    redis.resume();
    proxy?.release();
    await app?.close();
    await proxy?.close();
    await redis.stop();
  });

  const request = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> => {
    const response = await fetch(baseUrl + path, {
      method,
      headers: { 'content-type': 'application/openjobspec+json', ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : null };
  };
  const push = (body: unknown, key?: string) => request('POST', '/ojs/v1/jobs', body, key ? { 'idempotency-key': key } : {});
  const available = async () => (await request('GET', '/ojs/v1/queues/outage/stats')).body.queue.available as number;
  /** A retry with `key` until the claim is no longer in progress (it was ended, or its lease lapsed). */
  const retry = async (body: unknown, key: string): Promise<Reply> => {
    for (;;) {
      const reply = await push(body, key);
      if (reply.status !== 409 || reply.body.error.code !== 'x_idempotency_key_in_use') return reply;
      await sleep(200);
    }
  };
  const job = (type: string) => ({ type, args: [{ n: 1 }], options: { queue: 'outage' } });

  it('Redis hung (SIGSTOP) after the add was sent: 503 retryable: false, written: "unknown", and the add did run', async () => {
    await open(redis.url);
    expect((await push(job('outage.warm'))).status).to.equal(201); // the queue and the scripts are loaded
    redis.pause();
    const reply = await push(job('outage.plain'));
    expect(reply.status).to.equal(503);
    expect(reply.body.error).to.include({ code: 'backend_unavailable', retryable: false });
    expect(reply.body.error.details).to.deep.equal({ written: 'unknown' });
    redis.resume();
    // The add that timed out ran once Redis answered again: a retry would have made a second job.
    expect(await available()).to.equal(2);
  });

  it('Redis hung (SIGSTOP) with an Idempotency-Key: 503 retryable: true; after Redis is back a retry with the key enqueues exactly one job', async () => {
    await open(redis.url);
    expect((await push(job('outage.warm'))).status).to.equal(201);
    redis.pause();
    const reply = await push(job('outage.keyed'), 'outage-key-1');
    expect(reply.status).to.equal(503);
    expect(reply.body.error).to.include({ code: 'backend_unavailable', retryable: true });
    redis.resume();
    const again = await retry(job('outage.keyed'), 'outage-key-1');
    expect(again.status, JSON.stringify(again.body)).to.equal(201);
    expect(await available()).to.equal(2);
    const replay = await push(job('outage.keyed'), 'outage-key-1');
    expect(replay.body).to.deep.equal(again.body);
    expect(await available()).to.equal(2);
  });

  for (const keyed of [false, true]) {
    it(`the add ran but its reply was lost (command timeout)${keyed ? ', with an Idempotency-Key: retryable: true, and the retry answers that very job' : ': retryable: false, written: "unknown"'}`, async () => {
      proxy = await startReplyHoldingProxy(redis.port);
      await open(proxy.url);
      expect((await push(job('outage.warm'))).status).to.equal(201);
      const key = keyed ? 'outage-key-2' : undefined;
      proxy.holdRepliesAfter('outage.lost');
      const reply = await push(job('outage.lost'), key);
      expect(reply.status).to.equal(503);
      expect(reply.body.error).to.include({ code: 'backend_unavailable', retryable: keyed });
      expect(reply.body.error.details).to.deep.equal({ written: 'unknown' });
      proxy.release();
      expect(await available()).to.equal(2);
      if (!keyed) return;
      const again = await retry(job('outage.lost'), key!);
      expect(again.status, JSON.stringify(again.body)).to.equal(201);
      expect(again.body.job.type).to.equal('outage.lost');
      expect(await available()).to.equal(2);
    });
  }
});
