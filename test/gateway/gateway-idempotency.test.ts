/**
 * The `Idempotency-Key` header on PUSH and batch PUSH, on every backend: a retry with the key
 * answers the first response and enqueues nothing more; the key with another request is 422; a
 * request while the first is in progress is 409; a claim a crashed request left is taken over
 * once its lease lapses, and the job that request wrote is the answer, never a second one; the
 * key is kept as a digest only, and never logged.
 */
import { expect } from 'chai';
import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import pg from 'pg';
import { uuidv7 } from '../../src/uuid-v7.js';
import { createOjsServer } from '../../server/ojs-server.js';
import { createMemoryGatewayStore } from '../../server/memory-gateway-store.js';
import { parsePush } from '../../server/ojs-request.js';
import { idempotencyKeyDigest, idempotencyScope, requestFingerprint } from '../../server/idempotency-key.js';
import { REDIS_URL } from '../adapters/bullmq-test-redis.js';
import { databaseUrl } from '../conformance/subjects/graphile-worker.js';
import { GATEWAY_BACKENDS, startGateway, type Reply, type TestGateway } from './gateway-test-server.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const LEASE_MS = 1000;

for (const backend of GATEWAY_BACKENDS) {
  describe(`gateway Idempotency-Key: ${backend}`, function () {
    this.timeout(30_000);
    let gateway: TestGateway;
    before(async () => {
      gateway = await startGateway(backend, 'idem', { idempotencyLeaseMs: LEASE_MS });
    });
    after(() => gateway?.close());
    beforeEach(() => gateway.reset());

    const push = (body: unknown, key?: string, headers: Record<string, string> = {}) =>
      gateway.request('POST', '/ojs/v1/jobs', body, key === undefined ? headers : { 'idempotency-key': key, ...headers });
    const batch = (jobs: unknown[], key?: string) =>
      gateway.request('POST', '/ojs/v1/jobs/batch', { jobs }, key === undefined ? {} : { 'idempotency-key': key });
    const available = async (queue = 'default') => (await gateway.request('GET', `/ojs/v1/queues/${queue}/stats`)).body.queue.available;

    it('a retry with the same key answers the first response (status, body, Location) and enqueues nothing more', async () => {
      const body = { type: 'idem.send', args: [{ to: 'a' }] };
      const first = await push(body, '"order-1"');
      const again = await push(body, '"order-1"');
      expect(first.status).to.equal(201);
      expect(again.status).to.equal(201);
      expect(again.body).to.deep.equal(first.body);
      expect(again.headers.get('location')).to.equal(first.headers.get('location'));
      expect(again.headers.get('idempotent-replayed')).to.equal('true');
      expect(first.headers.get('idempotent-replayed')).to.equal(null);
      // The draft's quoted form and the bare form name one key.
      expect((await push(body, 'order-1')).body).to.deep.equal(first.body);
      expect(await available()).to.equal(1);
      // Without a key, the same body is another job.
      expect((await push(body)).status).to.equal(201);
      expect(await available()).to.equal(2);
    });

    it('the same key with another body is 422 x_idempotency_key_reused naming the header; the order of members does not count', async () => {
      const first = await push({ type: 'idem.send', args: [{ to: 'a', cc: 'b' }] }, 'k-422');
      const reordered = await push({ args: [{ cc: 'b', to: 'a' }], type: 'idem.send' }, 'k-422');
      expect(reordered.status).to.equal(201);
      expect(reordered.body).to.deep.equal(first.body);
      const other = await push({ type: 'idem.send', args: [{ to: 'someone else' }] }, 'k-422');
      expect(other.status).to.equal(422);
      expect(other.body.error).to.include({ code: 'x_idempotency_key_reused', retryable: false });
      expect(other.body.error.details).to.deep.equal({ header: 'Idempotency-Key' });
      expect(other.body.error.message).to.contain('Idempotency-Key');
      // Another route is another request too.
      const asBatch = await batch([{ type: 'idem.send', args: [{ to: 'a', cc: 'b' }] }], 'k-422');
      expect(asBatch.status).to.equal(422);
      expect(await available()).to.equal(1);
    });

    it('a batch PUSH retried with its key answers the first response and writes its jobs once', async () => {
      const jobs = [
        { type: 'idem.batch', args: [1] },
        { type: 'idem.batch', args: [2], options: { unique: { keys: ['type', 'args'], on_conflict: 'ignore' } } },
      ];
      const first = await batch(jobs, 'batch-1');
      const again = await batch(jobs, 'batch-1');
      expect(first.status).to.equal(201);
      expect(again.status).to.equal(201);
      expect(again.body).to.deep.equal(first.body);
      expect(again.headers.get('idempotent-replayed')).to.equal('true');
      expect(await available()).to.equal(2);
    });

    it('concurrent requests with one key enqueue once: the others are 409 x_idempotency_key_in_use (Retry-After) or the same answer', async () => {
      const body = { type: 'idem.race', args: [{ n: 1 }] };
      const replies = await Promise.all(Array.from({ length: 12 }, () => push(body, 'race-key')));
      const created = replies.filter((reply) => reply.status === 201);
      const busy = replies.filter((reply) => reply.status === 409);
      expect(created.length + busy.length, JSON.stringify(replies.map((reply) => reply.status))).to.equal(replies.length);
      expect(created.length).to.be.at.least(1);
      expect(new Set(created.map((reply) => reply.body.job.id)).size).to.equal(1);
      for (const reply of busy) {
        expect(reply.body.error).to.include({ code: 'x_idempotency_key_in_use', retryable: true });
        expect(Number(reply.headers.get('retry-after'))).to.be.at.least(1);
      }
      expect(await available()).to.equal(1);
      // Once answered, the key answers the same to everyone.
      expect((await push(body, 'race-key')).body.job.id).to.equal(created[0]!.body.job.id);
    });

    it('a refusal is an answer too: a reject duplicate is answered 409 again after the duplicate is gone', async () => {
      const policy = { keys: ['type', 'args'], on_conflict: 'reject' };
      const held = await push({ type: 'idem.reject', args: [1], options: { unique: policy } });
      const refused = await push({ type: 'idem.reject', args: [1], options: { unique: policy } }, 'reject-key');
      expect(refused.status).to.equal(409);
      expect(refused.body.error.code).to.equal('duplicate');
      expect((await gateway.request('DELETE', `/ojs/v1/jobs/${held.body.job.id}`)).status).to.equal(200);
      const again = await push({ type: 'idem.reject', args: [1], options: { unique: policy } }, 'reject-key');
      expect(again.status).to.equal(409);
      expect(again.body).to.deep.equal(refused.body);
      expect(await available()).to.equal(0);
    });

    it('a malformed key is 400 invalid_request naming the header, and enqueues nothing; a request refused by the wire rules leaves the key unused', async () => {
      for (const key of ['', '""', 'two words', '"unterminated', 'a'.repeat(256), 'é']) {
        const reply = await push({ type: 'idem.bad', args: [] }, key);
        expect(reply.status, JSON.stringify(key)).to.equal(400);
        expect(reply.body.error.code).to.equal('invalid_request');
        expect(reply.body.error.details).to.deep.equal({ header: 'Idempotency-Key' });
      }
      expect((await push({ type: 'Not A Type', args: [] }, 'unused')).status).to.equal(400);
      expect((await push({ type: 'idem.bad', args: [] }, 'unused')).status).to.equal(201);
      expect(await available()).to.equal(1);
    });

    for (const written of [false, true]) {
      it(`a claim left by a crashed request answers 409 until its lease lapses; then a retry takes it over and ${written ? 'answers the job that request wrote (no second job)' : 'enqueues the job under the id it was given'}`, async () => {
        const body = { type: 'idem.crash', args: [{ n: 7 }], options: { unique: { keys: ['type', 'args'], on_conflict: 'reject' } } };
        const key = `crash-${written}`;
        const id = uuidv7();
        // What a gateway process that crashed after claiming the key (and, when `written`, after
        // its enqueue reached the backend) leaves behind.
        const claim = await gateway.store.idempotency.claim({
          scope: idempotencyScope(undefined),
          keyHash: idempotencyKeyDigest(key),
          fingerprint: requestFingerprint('POST', '/ojs/v1/jobs', body),
          owner: 'crashed-process',
          ids: [id],
          leaseMs: LEASE_MS,
          retentionMs: 60_000,
        });
        expect(claim).to.deep.equal({ outcome: 'claimed', ids: [id], resumed: false });
        if (written) await gateway.store.enqueue({ ...parsePush(body).input, id });

        const busy = await push(body, key);
        expect(busy.status).to.equal(409);
        expect(busy.body.error.code).to.equal('x_idempotency_key_in_use');
        let reply: Reply;
        do {
          await sleep(100);
          reply = await push(body, key);
        } while (reply.status === 409 && reply.body.error.code === 'x_idempotency_key_in_use');
        expect(reply.status, JSON.stringify(reply.body)).to.equal(201);
        expect(reply.body.job.id).to.equal(id);
        expect(reply.headers.get('location')).to.equal(`/ojs/v1/jobs/${id}`);
        expect(await available()).to.equal(1);
        // Recorded: the next retry is a replay of this answer.
        const replay = await push(body, key);
        expect(replay.body).to.deep.equal(reply.body);
        expect(replay.headers.get('idempotent-replayed')).to.equal('true');
        // The crashed request's owner can no longer store an answer over it.
        const late = await gateway.store.idempotency.finish(
          { scope: idempotencyScope(undefined), keyHash: idempotencyKeyDigest(key) },
          'crashed-process',
          { status: 500, body: '{}' },
          60_000,
        );
        expect(late).to.equal(false);
      });
    }

    it('a batch whose crashed request wrote it is answered from its jobs when taken over, never written twice', async () => {
      const jobs = [
        { type: 'idem.crash_batch', args: [1] },
        { type: 'idem.crash_batch', args: [2] },
      ];
      const ids = [uuidv7(), uuidv7()];
      const key = 'crash-batch';
      await gateway.store.idempotency.claim({
        scope: idempotencyScope(undefined),
        keyHash: idempotencyKeyDigest(key),
        fingerprint: requestFingerprint('POST', '/ojs/v1/jobs/batch', { jobs }),
        owner: 'crashed-process',
        ids,
        leaseMs: LEASE_MS,
        retentionMs: 60_000,
      });
      await gateway.store.enqueueBatch(jobs.map((job, index) => ({ ...parsePush(job).input, id: ids[index]! })));
      let reply: Reply;
      do {
        await sleep(100);
        reply = await batch(jobs, key);
      } while (reply.status === 409);
      expect(reply.status, JSON.stringify(reply.body)).to.equal(201);
      expect(reply.body.jobs.map((job: { id: string }) => job.id)).to.deep.equal(ids);
      expect(await available()).to.equal(2);
    });

    it('a batch taken over answers the jobs its crashed request wrote, and enqueues again the entries that request deduplicated', async () => {
      const ignore = { keys: ['type', 'args'], on_conflict: 'ignore' };
      const held = await push({ type: 'idem.part', args: ['held'], options: { unique: ignore } });
      const jobs = [
        { type: 'idem.part', args: ['new'] },
        { type: 'idem.part', args: ['held'], options: { unique: ignore } },
      ];
      const ids = [uuidv7(), uuidv7()];
      const key = 'crash-batch-part';
      await gateway.store.idempotency.claim({
        scope: idempotencyScope(undefined),
        keyHash: idempotencyKeyDigest(key),
        fingerprint: requestFingerprint('POST', '/ojs/v1/jobs/batch', { jobs }),
        owner: 'crashed-process',
        ids,
        leaseMs: LEASE_MS,
        retentionMs: 60_000,
      });
      const written = await gateway.store.enqueueBatch(jobs.map((job, index) => ({ ...parsePush(job).input, id: ids[index]! })));
      expect(written.map((result) => result.outcome)).to.deep.equal(['created', 'deduplicated']);
      let reply: Reply;
      do {
        await sleep(100);
        reply = await batch(jobs, key);
      } while (reply.status === 409);
      expect(reply.status, JSON.stringify(reply.body)).to.equal(201);
      expect(reply.body.jobs.map((job: { id: string }) => job.id)).to.deep.equal([ids[0], held.body.job.id]);
      expect(reply.body.jobs[1].deduplicated).to.equal(true);
      expect(await available()).to.equal(2);
    });

    if (backend !== 'memory') {
      it('the backend keeps a digest of the key, never the key itself', async () => {
        const key = 'secret-idempotency-key-value';
        expect((await push({ type: 'idem.stored', args: [] }, key)).status).to.equal(201);
        const stored = backend === 'bullmq' ? await redisDump(gateway.names.prefix) : await tableDump(gateway.names.uniqueSchema);
        expect(stored).to.contain(idempotencyKeyDigest(key));
        expect(stored).to.not.contain(key);
      });
    }
  });
}

describe('gateway Idempotency-Key: the log', () => {
  it('never holds the key, at any level', async () => {
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const app = await createOjsServer({ store: createMemoryGatewayStore(), logger: { level: 'trace', stream } });
    try {
      const headers = { 'content-type': 'application/openjobspec+json', 'idempotency-key': 'never-logged-key' };
      const payload = JSON.stringify({ type: 'idem.log', args: [] });
      expect((await app.inject({ method: 'POST', url: '/ojs/v1/jobs', headers, payload })).statusCode).to.equal(201);
      expect(
        (await app.inject({ method: 'POST', url: '/ojs/v1/jobs', headers, payload: '{"type":"idem.log","args":[1]}' })).statusCode,
      ).to.equal(422);
      expect(lines.join('')).to.not.include('never-logged-key');
      expect(lines.length).to.be.greaterThan(0);
    } finally {
      await app.close();
    }
  });
});

async function redisDump(prefix: string): Promise<string> {
  const redis = new Redis(REDIS_URL);
  try {
    const keys = await redis.keys(`${prefix}:ojs-gateway:idempotency:*`);
    const values = await Promise.all(keys.map((key) => redis.hgetall(key)));
    return JSON.stringify({ keys, values });
  } finally {
    await redis.quit();
  }
}

async function tableDump(schema: string): Promise<string> {
  const client = new pg.Client({ connectionString: databaseUrl() });
  await client.connect();
  try {
    return JSON.stringify((await client.query(`select * from "${schema}".gateway_idempotency`)).rows);
  } finally {
    await client.end();
  }
}
