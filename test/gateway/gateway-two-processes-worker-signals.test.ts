/**
 * Two gateway processes over one Redis prefix or one database (gateway-process-pair.ts): a worker
 * signal asked at one process is answered by the other (it is on the backend, not in a process),
 * and an execution timeout is enforced once: a job past its `timeout_ms` is failed back by
 * whichever process is called first, exactly once, however many calls of both processes meet it.
 *
 * BullMQ and Graphile Worker only: the memory gateway is one process by nature.
 */
import { expect } from 'chai';
import { startGatewayPair, type GatewayPair } from './gateway-process-pair.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

for (const backend of ['bullmq', 'graphile-worker'] as const) {
  describe(`two gateway processes, worker signals and execution timeouts: ${backend}`, function () {
    this.timeout(60_000);
    let pair: GatewayPair;
    before(async () => {
      pair = await startGatewayPair(backend, 'pair-signals');
    });
    after(async () => {
      await pair?.close();
    });
    beforeEach(() => pair.reset());

    it("a quiet signal asked at one process is the state of the worker's heartbeats at the other, whose fetch then hands it nothing", async () => {
      const pushed = (await pair.at(0, 'POST', '/ojs/v1/jobs', { type: 'pair.signal', args: [1] })).body.job.id as string;
      await pair.at(0, 'POST', '/ojs/v1/jobs', { type: 'pair.signal', args: [2] });
      const fetched = await pair.at(1, 'POST', '/ojs/v1/workers/fetch', { queues: ['default'], worker_id: 'pair-worker-1' });
      expect(fetched.body.jobs.map((job: { id: string }) => job.id)).to.deep.equal([pushed]);
      expect((await pair.at(0, 'POST', '/ojs/v1/admin/workers/pair-worker-1/quiet')).status).to.equal(200);
      const beat = await pair.at(1, 'POST', '/ojs/v1/workers/heartbeat', {
        worker_id: 'pair-worker-1',
        active_jobs: 1,
        active_job_ids: [pushed],
      });
      expect(beat.body).to.include({ state: 'quiet' });
      expect(beat.body.jobs_extended).to.deep.equal([pushed]);
      expect(
        (await pair.at(1, 'POST', '/ojs/v1/workers/fetch', { queues: ['default'], worker_id: 'pair-worker-1' })).body.jobs,
      ).to.deep.equal([]);
      expect((await pair.at(1, 'POST', '/ojs/v1/admin/workers/pair-worker-1/terminate')).body.state).to.equal('terminate');
      expect((await pair.at(0, 'POST', '/ojs/v1/workers/heartbeat', { worker_id: 'pair-worker-1', active_jobs: [] })).body.state).to.equal(
        'terminate',
      );
      expect((await pair.at(0, 'POST', '/ojs/v1/workers/heartbeat', { worker_id: 'pair-worker-2', active_jobs: [] })).body.state).to.equal(
        'running',
      );
    });

    it('a job past its timeout_ms is failed once, whichever process meets it first, however many calls of both meet it', async () => {
      const pushed = (
        await pair.at(0, 'POST', '/ojs/v1/jobs', {
          type: 'pair.timeout',
          args: [1],
          options: { timeout_ms: 500, retry: { max_attempts: 2, initial_interval: 'PT1S' } },
        })
      ).body.job.id as string;
      const fetched = await pair.at(0, 'POST', '/ojs/v1/workers/fetch', { queues: ['default'], visibility_timeout_ms: 60_000 });
      expect(fetched.body.jobs[0]).to.include({ id: pushed, attempt: 1 });
      await sleep(900);
      // Both processes meet the lapse at once, through calls that sweep (INFO, stats).
      const calls = Array.from({ length: 12 }, (_, index) =>
        index % 3 === 0 ? pair.at(index % 2, 'GET', '/ojs/v1/queues/default/stats') : pair.at(index % 2, 'GET', `/ojs/v1/jobs/${pushed}`),
      );
      const replies = await Promise.all(calls);
      for (const reply of replies) expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
      const job = (await pair.at(1, 'GET', `/ojs/v1/jobs/${pushed}`)).body.job;
      // Failed twice, its two attempts would be spent: discarded.
      expect(job.state).to.equal('retryable');
      expect(job.error).to.include({ type: 'timeout' });
      let again: { id: string; attempt: number } | undefined;
      for (let tries = 0; !again && tries < 50; tries++) {
        again = (await pair.at(tries % 2, 'POST', '/ojs/v1/workers/fetch', { queues: ['default'] })).body.jobs[0];
        if (!again) await sleep(100);
      }
      expect(again).to.include({ id: pushed, attempt: 2 });
      expect((await pair.at(1, 'POST', '/ojs/v1/workers/ack', { job_id: pushed })).body.state).to.equal('completed');
    });
  });
}
