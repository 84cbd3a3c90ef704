/**
 * What the conformance suite leaves unchecked of retries and dead letters, on every backend: a
 * non-retryable error discards at once whatever attempts remain, the error history, the dead
 * letters kept on the backend (a second gateway over the same Redis or database lists, retries
 * and deletes them; on BullMQ they are BullMQ's failed jobs), the list's queue filter and pages,
 * 404 for a job that is not a dead letter, and the 422 of a bad retry policy. Every retry delay
 * here is 0 (`none`): no assertion depends on timing.
 */
import { expect } from 'chai';
import { Queue } from 'bullmq';
import { REDIS_URL } from '../adapters/bullmq-test-redis.js';
import { createOjsServer } from '../../server/ojs-server.js';
import { GATEWAY_BACKENDS, makeStore, startGateway, type TestGateway } from './gateway-test-server.js';

for (const backend of GATEWAY_BACKENDS) {
  describe(`gateway retries and dead letters: ${backend}`, function () {
    this.timeout(20_000);
    let gateway: TestGateway;
    before(async () => {
      gateway = await startGateway(backend, 'deadletter');
    });
    after(() => gateway?.close());
    beforeEach(() => gateway.reset());

    const push = async (queue: string, retry: Record<string, unknown>) => {
      const reply = await gateway.request('POST', '/ojs/v1/jobs', { type: 'dl.job', args: [{ queue }], options: { queue, retry } });
      expect(reply.status, JSON.stringify(reply.body)).to.equal(201);
      return reply.body.job.id as string;
    };
    const fetchOne = async (queue: string) => {
      const jobs = (await gateway.request('POST', '/ojs/v1/workers/fetch', { queues: [queue] })).body.jobs;
      expect(jobs, `a job in ${queue}`).to.have.length(1);
      return jobs[0] as { id: string; attempt: number; retry_delay_ms?: number };
    };
    const nack = (id: string, error: Record<string, unknown>) => gateway.request('POST', '/ojs/v1/workers/nack', { job_id: id, error });
    /** A job of `queue` failed for good after one attempt. */
    const deadLetter = async (queue: string) => {
      const id = await push(queue, { max_attempts: 1, backoff_type: 'none' });
      await fetchOne(queue);
      expect((await nack(id, { code: 'handler_error', message: 'boom' })).body.state).to.equal('discarded');
      return id;
    };
    const listed = async (query = '') => (await gateway.request('GET', `/ojs/v1/dead-letter${query}`)).body;

    it('a non-retryable error (by prefix) discards at once with attempts left; a retryable one is retried at the delay given', async () => {
      const id = await push('dl-fatal', { max_attempts: 5, backoff_type: 'none', non_retryable_errors: ['Auth.*'] });
      await fetchOne('dl-fatal');
      // Retried at once (`none`): `retryable` until the next read on memory, `available` already elsewhere.
      expect((await nack(id, { type: 'Timeout', message: 'slow' })).body.state).to.be.oneOf(['retryable', 'available']);
      // The last error stays readable while the job waits for its next attempt, in either state.
      expect((await gateway.request('GET', `/ojs/v1/jobs/${id}`)).body.job.error).to.include({ type: 'Timeout', message: 'slow' });
      expect(await fetchOne('dl-fatal')).to.include({ id, attempt: 2, retry_delay_ms: 0 });
      const discarded = await nack(id, { type: 'AuthenticationError', message: 'bad token', retryable: true });
      expect(discarded.body).to.include({ state: 'discarded', attempt: 2 });
      const job = (await gateway.request('GET', `/ojs/v1/jobs/${id}`)).body.job;
      expect(job.errors.map((entry: { type: string; attempt: number }) => [entry.type, entry.attempt])).to.deep.equal([
        ['Timeout', 1],
        ['AuthenticationError', 2],
      ]);
      expect(job.error).to.include({ type: 'AuthenticationError' });
    });

    it('lists dead letters by queue and in pages, with the total', async () => {
      const a1 = await deadLetter('dl-a');
      const a2 = await deadLetter('dl-a');
      const b1 = await deadLetter('dl-b');
      await push('dl-a', { max_attempts: 3 }); // live: no dead letter
      const all = await listed();
      expect(all.jobs.map((job: { id: string }) => job.id)).to.have.members([a1, a2, b1]);
      expect(all.pagination).to.include({ total: 3, has_more: false });
      const onlyA = await listed('?queue=dl-a');
      expect(onlyA.jobs.map((job: { id: string }) => job.id)).to.have.members([a1, a2]);
      const first = await listed('?limit=2');
      const rest = await listed('?limit=2&offset=2');
      expect(first.pagination).to.include({ total: 3, has_more: true });
      expect([...first.jobs, ...rest.jobs].map((job: { id: string }) => job.id)).to.have.members([a1, a2, b1]);
      expect((await gateway.request('GET', '/ojs/v1/dead-letter?limit=101')).body.error).to.include({ code: 'invalid_request' });
    });

    it('retry and delete of a job that is not a dead letter are 404, and so is a deleted one', async () => {
      const live = await push('dl-live', { max_attempts: 3 });
      expect((await gateway.request('POST', `/ojs/v1/dead-letter/${live}/retry`, {})).status).to.equal(404);
      expect((await gateway.request('DELETE', `/ojs/v1/dead-letter/${live}`)).status).to.equal(404);
      const dead = await deadLetter('dl-gone');
      expect((await gateway.request('DELETE', `/ojs/v1/dead-letter/${dead}`)).body).to.deep.equal({ deleted: true, job_id: dead });
      expect((await gateway.request('GET', `/ojs/v1/jobs/${dead}`)).status).to.equal(404);
      expect((await gateway.request('DELETE', `/ojs/v1/dead-letter/${dead}`)).status).to.equal(404);
      expect((await gateway.request('POST', `/ojs/v1/dead-letter/${dead}/retry`, {})).status).to.equal(404);
    });

    it('a bad retry policy is 422 naming the field; with another bad field, 400', async () => {
      const refused = await gateway.request('POST', '/ojs/v1/jobs', {
        type: 'dl.job',
        args: [],
        options: { retry: { backoff_coefficient: 0.5 } },
      });
      expect(refused.status).to.equal(422);
      expect(refused.body.error).to.include({ code: 'invalid_request', type: 'validation_error' });
      expect(refused.body.error.details.field).to.equal('options.retry.backoff_coefficient');
      const both = await gateway.request('POST', '/ojs/v1/jobs', { type: 'Bad', args: [], options: { retry: { max_attempts: 0 } } });
      expect(both.status).to.equal(400);
    });

    if (backend === 'memory') return;

    it('a second gateway over the same backend sees the dead letters, retries and deletes them', async () => {
      const retried = await deadLetter('dl-shared');
      const deleted = await deadLetter('dl-shared');
      const other = await createOjsServer({ store: makeStore(backend, gateway.names) });
      try {
        const list = (await other.inject({ method: 'GET', url: '/ojs/v1/dead-letter?queue=dl-shared' })).json();
        expect(list.jobs.map((job: { id: string }) => job.id)).to.have.members([retried, deleted]);
        expect(list.jobs.find((job: { id: string }) => job.id === retried).errors).to.have.length(1);
        const again = (await other.inject({ method: 'POST', url: `/ojs/v1/dead-letter/${retried}/retry`, payload: {} })).json();
        expect(again.job).to.include({ id: retried, state: 'available', attempt: 0 });
        expect((await other.inject({ method: 'DELETE', url: `/ojs/v1/dead-letter/${deleted}` })).statusCode).to.equal(200);
      } finally {
        await other.close();
      }
      expect((await listed('?queue=dl-shared')).jobs).to.deep.equal([]);
      expect(await fetchOne('dl-shared')).to.include({ id: retried, attempt: 1 });
      expect((await gateway.request('GET', `/ojs/v1/jobs/${deleted}`)).status).to.equal(404);
    });

    if (backend !== 'bullmq') return;

    it("on BullMQ a dead letter is a job of BullMQ's failed set, and BullMQ's own retry of it is seen", async () => {
      const id = await deadLetter('dl-host');
      const queue = new Queue('dl-host', { connection: { url: REDIS_URL }, prefix: gateway.names.prefix });
      try {
        expect((await queue.getFailed()).map((job) => job.id)).to.deep.equal([id]);
        await (await queue.getJob(id))!.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
      } finally {
        await queue.close();
      }
      expect((await listed()).jobs).to.deep.equal([]);
      expect((await gateway.request('GET', `/ojs/v1/jobs/${id}`)).body.job).to.include({ state: 'available', attempt: 0 });
    });
  });
}
