/**
 * The visibility timeout of the worker protocol: a job whose HTTP worker neither acks nor renews
 * it goes back to its queue for another attempt; a heartbeat keeps it reserved. On memory and
 * Graphile Worker the gateway enforces the timeout itself; on BullMQ it is BullMQ's lock and
 * stalled-job check (its interval, 30 s by default, is too long for a test).
 */
import { expect } from 'chai';
import { startGateway, type TestGateway } from './gateway-test-server.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

for (const backend of ['memory', 'graphile-worker'] as const) {
  describe(`gateway visibility timeout: ${backend}`, function () {
    this.timeout(20_000);
    let gateway: TestGateway;
    before(async () => {
      gateway = await startGateway(backend, 'visibility');
    });
    after(() => gateway?.close());
    beforeEach(() => gateway.reset());
    const fetchJobs = async (visibility: number) =>
      (await gateway.request('POST', '/ojs/v1/workers/fetch', { queues: ['default'], visibility_timeout_ms: visibility })).body.jobs;

    it('a job not acked within its visibility timeout is fetched again, as its next attempt', async () => {
      const pushed = await gateway.request('POST', '/ojs/v1/jobs', {
        type: 'slow.job',
        args: [],
        options: { retry: { max_attempts: 3, initial_interval: 'PT0S' } },
      });
      expect((await fetchJobs(200))[0]).to.include({ id: pushed.body.job.id, attempt: 1 });
      await sleep(500);
      expect((await fetchJobs(30_000))[0]).to.include({ id: pushed.body.job.id, attempt: 2 });
    });

    it('a heartbeat extends the reservation', async () => {
      const pushed = await gateway.request('POST', '/ojs/v1/jobs', { type: 'slow.job', args: [] });
      expect((await fetchJobs(300))[0].id).to.equal(pushed.body.job.id);
      const beat = await gateway.request('POST', '/ojs/v1/workers/heartbeat', {
        job_id: pushed.body.job.id,
        visibility_timeout_ms: 60_000,
      });
      expect(beat.body).to.include({ state: 'active' });
      await sleep(600);
      expect(await fetchJobs(30_000)).to.deep.equal([]);
      expect((await gateway.request('POST', '/ojs/v1/workers/ack', { job_id: pushed.body.job.id })).body.state).to.equal('completed');
    });
  });
}
