/**
 * What the official OJS SDKs send and read, on every backend: `unique.key` (the JS SDK's list of
 * arg fields, the Python SDK's list of dimensions), the worker protocol's heartbeat (`active_jobs`
 * a count beside `active_job_ids`), the flat fields of `queues.stats`, a schedule read back to the
 * millisecond, and 409 `conflict` for an ack, nack or heartbeat of a job no longer the caller's.
 *
 * The bodies are the SDKs' wire forms as `@openjobspec/sdk` (ojs-js-sdk: src/job.ts
 * `toWireUnique`, src/worker.ts `sendHeartbeat`, src/queue.ts `QueueStats`) builds them.
 */
import { expect } from 'chai';
import { GATEWAY_BACKENDS, startGateway, type TestGateway } from './gateway-test-server.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

for (const backend of GATEWAY_BACKENDS) {
  describe(`gateway SDK wire forms: ${backend}`, function () {
    this.timeout(20_000);
    let gateway: TestGateway;
    before(async () => {
      gateway = await startGateway(backend, 'wire');
    });
    after(() => gateway?.close());
    beforeEach(() => gateway.reset());

    const push = (body: unknown) => gateway.request('POST', '/ojs/v1/jobs', body);
    const fetchJobs = async (visibility: number, queue = 'default') =>
      (await gateway.request('POST', '/ojs/v1/workers/fetch', { queues: [queue], visibility_timeout_ms: visibility })).body.jobs as {
        id: string;
      }[];

    describe('unique.key', () => {
      it("the JS SDK's key (arg field names) is args_keys over type and args: it meets the same job spelled with keys and args_keys", async () => {
        const spelled = { keys: ['type', 'args'], args_keys: ['order_id'], on_conflict: 'reject' };
        const first = await push({ type: 'order.sync', args: [{ order_id: 7, note: 'a' }], options: { unique: spelled } });
        expect(first.status).to.equal(201);
        // toWireUnique: { key, period, on_conflict }, under options.unique.
        const sdk = { key: ['order_id'], period: 'PT1H', on_conflict: 'reject' };
        const second = await push({ type: 'order.sync', args: [{ order_id: 7, note: 'b' }], options: { unique: sdk } });
        expect(second.status, JSON.stringify(second.body)).to.equal(409);
        expect(second.body.error.details).to.include({ existing_job_id: first.body.job.id, uniqueness_key: first.body.job.uniqueness_key });
        const other = await push({ type: 'order.sync', args: [{ order_id: 8, note: 'a' }], options: { unique: sdk } });
        expect(other.status).to.equal(201);
      });

      it("the Python SDK's key (dimensions only) is keys", async () => {
        const first = await push({ type: 'report.build', args: [{ day: 1 }], options: { unique: { keys: ['type', 'queue', 'args'] } } });
        const second = await push({ type: 'report.build', args: [{ day: 1 }], unique: { key: ['type', 'queue', 'args'] } });
        expect(second.status, JSON.stringify(second.body)).to.equal(409);
        expect(second.body.error.details.uniqueness_key).to.equal(first.body.job.uniqueness_key);
      });

      it('key beside keys, key beside args_keys, or a key that is not a list of strings: 400 invalid_request naming the field', async () => {
        for (const [unique, also] of [
          [{ key: ['type'], keys: ['type'] }, 'options.unique.keys'],
          [{ key: ['order_id'], args_keys: ['order_id'] }, 'options.unique.args_keys'],
          [{ key: 'order_id' }, null],
          [{ key: [1] }, null],
        ] as const) {
          const reply = await push({ type: 'order.sync', args: [{ order_id: 1 }], options: { unique } });
          expect(reply.status, JSON.stringify(unique)).to.equal(400);
          expect(reply.body.error.code).to.equal('invalid_request');
          expect(reply.body.error.details.field).to.equal('options.unique.key');
          if (also) expect(reply.body.error.message).to.contain(also);
        }
      });

      it('reads key the same way in a batch, and names a refused one by its job', async () => {
        const first = await push({ type: 'order.sync', args: [{ order_id: 3, note: 'a' }], options: { unique: { key: ['order_id'] } } });
        const many = await gateway.request('POST', '/ojs/v1/jobs/batch', {
          jobs: [
            { type: 'order.sync', args: [{ order_id: 4 }], options: { unique: { key: ['order_id'], on_conflict: 'ignore' } } },
            { type: 'order.sync', args: [{ order_id: 3, note: 'b' }], options: { unique: { key: ['order_id'], on_conflict: 'ignore' } } },
          ],
        });
        expect(many.status, JSON.stringify(many.body)).to.equal(201);
        expect(many.body.jobs[1]).to.include({ id: first.body.job.id, deduplicated: true });
        expect(many.body.jobs[0].deduplicated).to.equal(undefined);
        const bad = await gateway.request('POST', '/ojs/v1/jobs/batch', {
          jobs: [
            { type: 'order.sync', args: [{ order_id: 5 }] },
            { type: 'order.sync', args: [{ order_id: 5 }], options: { unique: { key: ['type'], keys: ['type'] } } },
          ],
        });
        expect(bad.status).to.equal(400);
        expect(bad.body.error.details.field).to.equal('jobs[1].options.unique.key');
      });
    });

    describe('worker protocol', () => {
      it("accepts the JS SDK's heartbeat (active_jobs a count, active_job_ids) and extends each listed job", async () => {
        const id = (await push({ type: 'slow.job', args: [] })).body.job.id as string;
        expect((await fetchJobs(300)).map((job) => job.id)).to.deep.equal([id]);
        // sendHeartbeat: no visibility_timeout_ms, so the server's default (30 s) applies.
        const beat = await gateway.request('POST', '/ojs/v1/workers/heartbeat', {
          worker_id: 'worker_1',
          state: 'running',
          active_jobs: 1,
          active_job_ids: [id],
          hostname: 'unknown',
          pid: 1,
          queues: ['default'],
          concurrency: 10,
          labels: [],
        });
        expect(beat.status, JSON.stringify(beat.body)).to.equal(200);
        expect(beat.body).to.include({ state: 'running' });
        expect(beat.body.jobs_extended).to.deep.equal([id]);
        await sleep(600);
        // Past the fetch's 300 ms: still this worker's, so no other fetch gets it and the ack lands.
        expect(await fetchJobs(30_000)).to.deep.equal([]);
        const ack = await gateway.request('POST', '/ojs/v1/workers/ack', { job_id: id });
        expect(ack.status, JSON.stringify(ack.body)).to.equal(200);
        const idle = await gateway.request('POST', '/ojs/v1/workers/heartbeat', {
          worker_id: 'worker_1',
          active_jobs: 0,
          active_job_ids: [],
        });
        expect(idle.status).to.equal(200);
        expect(idle.body.jobs_extended).to.deep.equal([]);
        const negative = await gateway.request('POST', '/ojs/v1/workers/heartbeat', { worker_id: 'worker_1', active_jobs: -1 });
        expect(negative.status).to.equal(400);
        expect(negative.body.error.details.field).to.equal('active_jobs');
      });

      it('an ack, nack or heartbeat after the reservation lapsed is 409 conflict, never a server error', async () => {
        const id = (await push({ type: 'slow.job', args: [], options: { retry: { max_attempts: 3 } } })).body.job.id as string;
        expect((await fetchJobs(100)).map((job) => job.id)).to.deep.equal([id]);
        await sleep(400);
        for (const [path, body] of [
          ['/ojs/v1/workers/ack', { job_id: id }],
          ['/ojs/v1/workers/nack', { job_id: id, error: { code: 'handler_error', message: 'late', retryable: true } }],
          ['/ojs/v1/workers/heartbeat', { job_id: id }],
        ] as const) {
          const reply = await gateway.request('POST', path, body);
          expect(reply.status, `${path} ${JSON.stringify(reply.body)}`).to.equal(409);
          expect(reply.body.error).to.include({ code: 'conflict', retryable: false });
        }
      });

      it('an ack, nack or heartbeat of a job already acked is 409 conflict', async () => {
        const id = (await push({ type: 'quick.job', args: [] })).body.job.id as string;
        await fetchJobs(30_000);
        expect((await gateway.request('POST', '/ojs/v1/workers/ack', { job_id: id })).status).to.equal(200);
        for (const [path, body] of [
          ['/ojs/v1/workers/ack', { job_id: id }],
          ['/ojs/v1/workers/nack', { job_id: id, error: { message: 'late' } }],
          ['/ojs/v1/workers/heartbeat', { job_id: id }],
        ] as const) {
          const reply = await gateway.request('POST', path, body);
          expect(reply.status, path).to.equal(409);
          expect(reply.body.error.code).to.equal('conflict');
        }
      });
    });

    it('queue stats carry the flat fields the SDK reads beside the suite shape', async () => {
      for (const n of [1, 2]) await push({ type: 'stats.job', args: [n], options: { queue: 'wire-stats' } });
      await fetchJobs(30_000, 'wire-stats');
      const stats = await gateway.request('GET', '/ojs/v1/queues/wire-stats/stats');
      expect(stats.status).to.equal(200);
      const counts = { name: 'wire-stats', available: 1, active: 1, scheduled: 0, retryable: 0, completed: 0, discarded: 0, paused: false };
      expect(stats.body).to.include(counts);
      expect(stats.body.queue).to.include(counts);
    });

    it('a scheduled_at comes back to the millisecond, in the PUSH answer and in INFO', async () => {
      const due = new Date(Date.now() + 3_600_000);
      due.setUTCMilliseconds(642);
      for (const [field, sent] of [
        ['scheduled_at', due.toISOString()],
        ['delay_until', new Date(due.getTime() + 1).toISOString()],
      ] as const) {
        const pushed = await push({ type: 'later.job', args: [field], options: { [field]: sent } });
        expect(pushed.status).to.equal(201);
        expect(pushed.body.job).to.include({ state: 'scheduled', scheduled_at: sent });
        const info = await gateway.request('GET', `/ojs/v1/jobs/${pushed.body.job.id}`);
        expect(info.body.job.scheduled_at, field).to.equal(sent);
      }
    });
  });
}
