/**
 * The gateway's security and limits: the bearer token on every route but health, the body size
 * limit, the reset route only with `testReset`, the wire headers on every answer (errors too),
 * health answering 503 when the store is down, and what reaches the log.
 */
import { expect } from 'chai';
import { Writable } from 'node:stream';
import { createOjsServer } from '../../server/ojs-server.js';
import { parsePush } from '../../server/ojs-request.js';
import { createMemoryGatewayStore } from '../../server/memory-gateway-store.js';
import { createBullmqGatewayStore } from '../../server/bullmq-gateway-store.js';
import { createGatewayStore, GatewayOptionError } from '../../server/create-gateway-store.js';
import { startGateway, type TestGateway } from './gateway-test-server.js';

const job = { type: 'email.send', args: [{ to: 'secret-recipient@example.com' }], options: { unique: { keys: ['type', 'args'] } } };

describe('gateway security and limits', function () {
  this.timeout(10_000);

  describe('with a bearer token', () => {
    let gateway: TestGateway;
    before(async () => {
      gateway = await startGateway('memory', 'token', { token: 's3cret' });
    });
    after(() => gateway.close());

    it('refuses every route but health without the token (401 unauthenticated)', async () => {
      for (const [method, path] of [
        ['POST', '/ojs/v1/jobs'],
        ['GET', '/ojs/v1/jobs/x'],
        ['POST', '/ojs/v1/workers/fetch'],
        ['GET', '/ojs/manifest'],
        ['POST', '/ojs/v1/admin/reset'],
      ] as const) {
        const reply = await gateway.request(method, path, method === 'POST' ? {} : undefined);
        expect(reply.status, `${method} ${path}`).to.equal(401);
        expect(reply.body.error.code).to.equal('unauthenticated');
      }
      expect((await gateway.request('GET', '/ojs/v1/health')).status).to.equal(200);
    });

    it('refuses a wrong token and accepts the right one', async () => {
      expect((await gateway.request('POST', '/ojs/v1/jobs', job, { authorization: 'Bearer s3creT' })).status).to.equal(401);
      expect((await gateway.request('POST', '/ojs/v1/jobs', job, { authorization: 's3cret' })).status).to.equal(401);
      expect((await gateway.request('POST', '/ojs/v1/jobs', job, { authorization: 'Bearer s3cret' })).status).to.equal(201);
    });
  });

  describe('without options', () => {
    let gateway: TestGateway;
    before(async () => {
      const app = await createOjsServer({ store: createMemoryGatewayStore(), bodyLimit: 1024 });
      const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
      gateway = { app, baseUrl } as TestGateway;
    });
    after(() => gateway.app.close());
    const send = (method: string, path: string, body?: string) =>
      fetch(gateway.baseUrl + path, {
        method,
        ...(body === undefined ? {} : { body, headers: { 'content-type': 'application/openjobspec+json' } }),
      });

    it('drops the fields the server sets from a PUSH (state, result, uniqueness_key, started_at …), keeps other unknown ones', async () => {
      const sent = {
        type: 'spoof.job',
        args: [],
        state: 'completed',
        result: { ok: true },
        uniqueness_key: 'forged',
        started_at: '2020-01-01T00:00:00Z',
        completed_at: '2020-01-01T00:00:00Z',
        attempt: 9,
        custom: 'kept',
      };
      for (const path of ['/ojs/v1/jobs', '/ojs/v1/jobs/batch']) {
        const reply = await send('POST', path, JSON.stringify(path.endsWith('batch') ? { jobs: [sent] } : sent));
        const body = (await reply.json()) as { job: Record<string, unknown>; jobs: Record<string, unknown>[] };
        const job = path.endsWith('batch') ? body.jobs[0] : body.job;
        expect(job, path).to.include({ state: 'available', attempt: 0, custom: 'kept' });
        for (const field of ['result', 'uniqueness_key', 'started_at', 'completed_at'])
          expect(job, `${path} ${field}`).to.not.have.property(field);
      }
    });

    it('has no reset route unless testReset is given (404 with hint and docs_url)', async () => {
      const reply = await send('POST', '/ojs/v1/admin/reset');
      expect(reply.status).to.equal(404);
      const body = (await reply.json()) as { error: object };
      expect(body.error).to.include.keys('hint', 'docs_url');
    });

    it('refuses a body over the limit with 413, and an empty or malformed one with invalid_payload', async () => {
      const big = await send('POST', '/ojs/v1/jobs', JSON.stringify({ type: 'a.b', args: ['x'.repeat(2000)] }));
      expect(big.status).to.equal(413);
      expect(((await big.json()) as { error: { code: string } }).error.code).to.equal('payload_too_large');
      for (const body of [undefined, '', '{ nope']) {
        const reply = await send('POST', '/ojs/v1/jobs', body);
        expect(reply.status).to.equal(400);
        expect(((await reply.json()) as { error: { code: string } }).error.code).to.equal('invalid_payload');
      }
    });

    it('answers every response, errors included, with the OJS content type (no charset), OJS-Version and X-Request-Id', async () => {
      const push = JSON.stringify({ type: 'wire.headers', args: [] });
      const keyed = (key: string) =>
        fetch(gateway.baseUrl + '/ojs/v1/jobs', {
          method: 'POST',
          body: push,
          headers: { 'content-type': 'application/openjobspec+json', 'idempotency-key': key },
        });
      const first = await keyed('wire-headers-1');
      const replayed = await keyed('wire-headers-1');
      const replies = [
        await send('GET', '/ojs/manifest'),
        await send('GET', '/nowhere'),
        await send('POST', '/ojs/v1/jobs', '{}'),
        await send('POST', '/ojs/v1/jobs', push),
        await send('POST', '/ojs/v1/jobs', JSON.stringify({ type: 'a.b', args: ['x'.repeat(2000)] })),
        await send('GET', '/ojs/v1/events'),
        first,
        replayed,
      ];
      expect(replies.map((reply) => reply.status)).to.deep.equal([200, 404, 400, 201, 413, 200, 201, 201]);
      expect(replayed.headers.get('idempotent-replayed')).to.equal('true');
      // The stored answer is sent as it was stored: the same JSON text, not a JSON string of it.
      const answer = (await first.json()) as { job: { type: string } };
      expect(answer.job.type).to.equal('wire.headers');
      expect(await replayed.json()).to.deep.equal(answer);
      for (const reply of replies) {
        expect(reply.headers.get('content-type')).to.equal('application/openjobspec+json');
        expect(reply.headers.get('ojs-version')).to.equal('1.0');
        expect(reply.headers.get('x-request-id')).to.match(/^req_[0-9a-f-]{36}$/);
      }
    });

    it('lists an event with a UUIDv7 id and an RFC 3339 time, the same on every listing', async () => {
      const pushed = await send('POST', '/ojs/v1/jobs', JSON.stringify({ type: 'events.listed', args: [] }));
      const { job } = (await pushed.json()) as { job: { id: string } };
      const list = async () => {
        const reply = await send('GET', '/ojs/v1/events?types=job.enqueued');
        const { events } = (await reply.json()) as { events: { id: string; type: string; time: string; data: { job_id: string } }[] };
        return events.find((event) => event.data.job_id === job.id)!;
      };
      const event = await list();
      expect(Object.keys(event)).to.deep.equal(['id', 'type', 'time', 'data']);
      expect(event.id).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(new Date(event.time).toISOString()).to.equal(event.time);
      expect(await list()).to.deep.equal(event);
    });

    it('validates the worker routes against their schemas: invalid_request naming the field, no coercion', async () => {
      for (const [path, body, field] of [
        ['/ojs/v1/workers/fetch', { queues: ['default'], count: 0 }, 'count'],
        ['/ojs/v1/workers/fetch', { queues: ['default'], count: '5' }, 'count'],
        ['/ojs/v1/workers/fetch', { queues: [] }, 'queues'],
        ['/ojs/v1/workers/ack', { result: 1 }, 'job_id'],
        ['/ojs/v1/workers/heartbeat', { job_id: 'x', visibility_timeout_ms: -1 }, 'visibility_timeout_ms'],
      ] as const) {
        const reply = await send('POST', path, JSON.stringify(body));
        const answer = (await reply.json()) as { error: { code: string; details: { field: string } } };
        expect(reply.status, `${path} ${JSON.stringify(body)}`).to.equal(400);
        expect(answer.error.code).to.equal('invalid_request');
        expect(answer.error.details.field).to.equal(field);
      }
    });

    it("reports each backend's strength and mechanism in the manifest", async () => {
      const manifest = (await (await send('GET', '/ojs/manifest')).json()) as {
        capabilities: { unique_jobs: { mechanism: string } };
        unique_job_strength: string;
      };
      expect(manifest.capabilities.unique_jobs).to.include({ strength: 'strong' });
      expect(manifest.capabilities.unique_jobs.mechanism).to.be.a('string').that.is.not.empty;
      expect(manifest.unique_job_strength).to.equal('strong');
    });
  });

  it("PUSH sets a retry policy only when options.retry gives one: otherwise the host's own backoff stays", () => {
    expect(parsePush({ type: 'a', args: [] }).input.extras).to.not.have.property('retry');
    const attemptsOnly = parsePush({ type: 'a', args: [], options: { retry: { max_attempts: 3 } } }).input;
    expect(attemptsOnly.extras).to.not.have.property('retry');
    expect(attemptsOnly.max_attempts).to.equal(3);
    const shaped = parsePush({ type: 'a', args: [], options: { retry: { initial_interval: 'PT2S' } } }).input.extras;
    expect(shaped.retry).to.deep.equal({
      backoff: 'exponential',
      initialIntervalMs: 2000,
      backoffCoefficient: 2,
      maxIntervalMs: 300_000,
      jitter: true,
      nonRetryableErrors: [],
      onExhaustion: 'discard',
    });
  });

  it('createGatewayStore refuses graphile-worker without a database URL with a typed error naming the option', async () => {
    const error = await createGatewayStore({ backend: 'graphile-worker' }).then(
      () => null,
      (thrown: unknown) => thrown,
    );
    expect(error).to.be.instanceOf(GatewayOptionError);
    expect(error).to.include({ code: 'invalid_option', option: 'databaseUrl' });
  });

  it('answers health with 503 when the store is down', async () => {
    const app = await createOjsServer({
      store: createBullmqGatewayStore({ redisUrl: 'redis://127.0.0.1:1', prefix: 'ojs-test:unreachable' }),
    });
    try {
      const reply = await app.inject({ method: 'GET', url: '/ojs/v1/health' });
      expect(reply.statusCode).to.equal(503);
      expect(reply.json()).to.deep.include({ status: 'degraded' });
      expect(reply.json().backend.status).to.equal('disconnected');
      // No token is needed for health: the backend's own error text (host, port) is not shown.
      expect(reply.json().backend.error).to.equal('the backend is unreachable');
      expect(reply.body).to.not.contain('127.0.0.1');
    } finally {
      await app.close();
    }
  });

  for (const [level, logged] of [
    ['info', false],
    ['debug', true],
  ] as const) {
    it(`logs job args and uniqueness keys ${logged ? 'at debug' : 'never at info'}, and never the token`, async () => {
      const lines: string[] = [];
      const stream = new Writable({
        write(chunk, _encoding, done) {
          lines.push(String(chunk));
          done();
        },
      });
      const app = await createOjsServer({
        store: createMemoryGatewayStore(),
        token: 'tok-123',
        logger: { level, stream, redact: ['req.headers.authorization'] },
      });
      try {
        const headers = { authorization: 'Bearer tok-123', 'content-type': 'application/openjobspec+json' };
        const first = await app.inject({ method: 'POST', url: '/ojs/v1/jobs', headers, payload: JSON.stringify(job) });
        const again = await app.inject({ method: 'POST', url: '/ojs/v1/jobs', headers, payload: JSON.stringify(job) });
        expect(again.statusCode).to.equal(409);
        const log = lines.join('');
        expect(log).to.not.include('tok-123');
        expect(log.includes('secret-recipient')).to.equal(logged);
        expect(log).to.not.include(first.json().job.uniqueness_key.slice(-16));
      } finally {
        await app.close();
      }
    });
  }
});
