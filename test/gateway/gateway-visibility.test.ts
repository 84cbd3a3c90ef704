/**
 * The visibility timeout of the worker protocol: a job whose HTTP worker neither acks nor renews
 * it goes back to its queue for another attempt; a heartbeat keeps it reserved. The execution
 * timeout (`options.timeout_ms`): a heartbeat never extends a job past it, and a job still running
 * then fails with error type `timeout`. Every store enforces both with its lapsed-reservation sweep
 * (server/job-reservation.ts); on BullMQ the lock is held a margin longer, so the sweep, not
 * BullMQ's stalled check, fails the job back. Worker signals (quiet, terminate) through the admin
 * routes. Memory's time is a virtual clock the tests move; the others' (Redis's, PostgreSQL's) the
 * tests wait out.
 */
import { expect } from 'chai';
import { startGateway, type TestGateway } from './gateway-test-server.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

for (const backend of ['memory', 'bullmq', 'graphile-worker'] as const) {
  describe(`gateway visibility timeout: ${backend}`, function () {
    this.timeout(20_000);
    let gateway: TestGateway;
    let virtualNow = Date.parse('2026-03-01T10:00:00.000Z');
    const clock = backend === 'memory' ? { now: () => virtualNow } : undefined;
    /** Lets `ms` pass: the virtual clock moves, or the test waits for the server's. */
    const elapse = async (ms: number) => {
      if (clock) virtualNow += ms;
      else await sleep(ms);
    };
    before(async () => {
      gateway = await startGateway(backend, 'visibility', { clock });
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
      await elapse(500);
      expect((await fetchJobs(30_000))[0]).to.include({ id: pushed.body.job.id, attempt: 2 });
    });

    it('a heartbeat extends the reservation', async () => {
      const pushed = await gateway.request('POST', '/ojs/v1/jobs', { type: 'slow.job', args: [] });
      expect((await fetchJobs(300))[0].id).to.equal(pushed.body.job.id);
      const beat = await gateway.request('POST', '/ojs/v1/workers/heartbeat', {
        job_id: pushed.body.job.id,
        visibility_timeout_ms: 60_000,
      });
      expect(beat.body).to.include({ state: 'running', job_id: pushed.body.job.id });
      expect(beat.body.jobs_extended).to.deep.equal([pushed.body.job.id]);
      await elapse(600);
      expect(await fetchJobs(30_000)).to.deep.equal([]);
      expect((await gateway.request('POST', '/ojs/v1/workers/ack', { job_id: pushed.body.job.id })).body.state).to.equal('completed');
    });

    it("BEAT in the binding's form (worker_id, active_jobs) extends each active job and answers state, jobs_extended, server_time", async () => {
      const first = (await gateway.request('POST', '/ojs/v1/jobs', { type: 'slow.job', args: [1] })).body.job.id as string;
      const second = (await gateway.request('POST', '/ojs/v1/jobs', { type: 'slow.job', args: [2] })).body.job.id as string;
      expect((await fetchJobs(300)).map((job: { id: string }) => job.id)).to.deep.equal([first]);
      const beat = await gateway.request('POST', '/ojs/v1/workers/heartbeat', {
        worker_id: 'worker-1',
        active_jobs: [first, second],
        visibility_timeout_ms: 60_000,
      });
      expect(beat.status).to.equal(200);
      expect(beat.body).to.include({ state: 'running' });
      expect(beat.body.jobs_extended).to.deep.equal([first]);
      expect(Date.parse(beat.body.server_time)).to.be.a('number').and.not.NaN;
      await elapse(600);
      expect((await fetchJobs(30_000)).map((job: { id: string }) => job.id)).to.deep.equal([second]);
      const ack = await gateway.request('POST', '/ojs/v1/workers/ack', { job_id: first });
      expect(ack.body).to.include({ acknowledged: true, job_id: first, id: first, state: 'completed' });
      const nack = await gateway.request('POST', '/ojs/v1/workers/nack', { job_id: second, error: { code: 'x', message: 'no' } });
      expect(nack.body).to.include({ job_id: second, id: second });
      const anonymous = await gateway.request('POST', '/ojs/v1/workers/heartbeat', { active_jobs: [first] });
      expect(anonymous.status).to.equal(400);
      expect(anonymous.body.error.details).to.include({ field: 'worker_id' });
    });

    it("without visibility_timeout_ms in the fetch or heartbeat, the job's own options.visibility_timeout_ms is its reservation", async () => {
      const pushed = (
        await gateway.request('POST', '/ojs/v1/jobs', { type: 'own.visibility', args: [], options: { visibility_timeout_ms: 400 } })
      ).body.job.id as string;
      const fetched = await gateway.request('POST', '/ojs/v1/workers/fetch', { queues: ['default'] });
      expect(fetched.body.jobs[0]).to.include({ id: pushed, attempt: 1 });
      const beat = await gateway.request('POST', '/ojs/v1/workers/heartbeat', { worker_id: 'w-own', active_jobs: [pushed] });
      expect(beat.body.jobs_extended).to.deep.equal([pushed]);
      await elapse(900);
      const job = (await gateway.request('GET', `/ojs/v1/jobs/${pushed}`)).body.job;
      expect(job).to.include({ state: 'available' });
      expect((await gateway.request('POST', '/ojs/v1/workers/fetch', { queues: ['default'] })).body.jobs[0]).to.include({
        id: pushed,
        attempt: 2,
      });
    });

    it('a heartbeat never extends a job past its timeout_ms: it then fails with error type timeout, under its retry policy', async () => {
      const pushed = (
        await gateway.request('POST', '/ojs/v1/jobs', {
          type: 'slow.job',
          args: [],
          options: { timeout_ms: 600, retry: { max_attempts: 2, initial_interval: 'PT30S' } },
        })
      ).body.job.id as string;
      expect((await fetchJobs(60_000))[0].id).to.equal(pushed);
      const beat = await gateway.request('POST', '/ojs/v1/workers/heartbeat', { job_id: pushed, visibility_timeout_ms: 60_000 });
      expect(beat.status).to.equal(200);
      await elapse(1100);
      const job = (await gateway.request('GET', `/ojs/v1/jobs/${pushed}`)).body.job;
      expect(job).to.include({ state: 'retryable', attempt: 1 });
      expect(job.error).to.include({ type: 'timeout' });
      const late = await gateway.request('POST', '/ojs/v1/workers/ack', { job_id: pushed });
      expect(late.status).to.equal(409);
    });

    it('NACK with requeue: true gives the job back: available at once, its error kept, its attempt counted', async () => {
      const pushed = (await gateway.request('POST', '/ojs/v1/jobs', { type: 'slow.job', args: [] })).body.job.id as string;
      await fetchJobs(30_000);
      const nack = await gateway.request('POST', '/ojs/v1/workers/nack', {
        job_id: pushed,
        requeue: true,
        error: { code: 'shutdown', message: 'worker shutting down', retryable: false },
      });
      expect(nack.body).to.include({ state: 'available', attempt: 1 });
      const job = (await gateway.request('GET', `/ojs/v1/jobs/${pushed}`)).body.job;
      expect(job).to.include({ state: 'available' });
      expect((await fetchJobs(30_000))[0]).to.include({ id: pushed, attempt: 2 });
    });

    it("worker signals: quiet and terminate are answered in that worker's heartbeats only, its fetches get nothing, and terminate stays", async () => {
      const pushed = (await gateway.request('POST', '/ojs/v1/jobs', { type: 'slow.job', args: [] })).body.job.id as string;
      const fetched = await gateway.request('POST', '/ojs/v1/workers/fetch', { queues: ['default'], worker_id: 'w-signal' });
      expect(fetched.body.jobs[0].id).to.equal(pushed);
      const quiet = await gateway.request('POST', '/ojs/v1/admin/workers/w-signal/quiet');
      expect(quiet.status).to.equal(200);
      expect(quiet.body).to.include({ worker_id: 'w-signal', state: 'quiet' });
      const beat = await gateway.request('POST', '/ojs/v1/workers/heartbeat', { worker_id: 'w-signal', active_jobs: [pushed] });
      expect(beat.body).to.include({ state: 'quiet' });
      expect(beat.body.jobs_extended).to.deep.equal([pushed]);
      const other = await gateway.request('POST', '/ojs/v1/workers/heartbeat', { worker_id: 'w-other', active_jobs: [] });
      expect(other.body.state).to.equal('running');
      await gateway.request('POST', '/ojs/v1/jobs', { type: 'slow.job', args: [2] });
      expect(
        (await gateway.request('POST', '/ojs/v1/workers/fetch', { queues: ['default'], worker_id: 'w-signal' })).body.jobs,
      ).to.deep.equal([]);
      expect((await gateway.request('POST', '/ojs/v1/workers/ack', { job_id: pushed, worker_id: 'w-signal' })).body.state).to.equal(
        'completed',
      );
      expect((await gateway.request('POST', '/ojs/v1/admin/workers/w-signal/terminate')).body.state).to.equal('terminate');
      expect((await gateway.request('POST', '/ojs/v1/admin/workers/w-signal/quiet')).body.state).to.equal('terminate');
      const last = await gateway.request('POST', '/ojs/v1/workers/heartbeat', { worker_id: 'w-signal', active_jobs: [] });
      expect(last.body.state).to.equal('terminate');
      expect(
        (await gateway.request('POST', '/ojs/v1/workers/fetch', { queues: ['default'], worker_id: 'w-other' })).body.jobs,
      ).to.have.length(1);
      const long = await gateway.request('POST', `/ojs/v1/admin/workers/${'w'.repeat(257)}/quiet`);
      expect(long.status).to.equal(400);
      expect(long.body.error.details).to.include({ field: 'id' });
    });

    it('an x_update of an active job keeps its run: started_at stays, and its reservation still lapses', async function () {
      const declared: string[] = (await gateway.request('GET', '/ojs/manifest')).body.capabilities.unique_jobs.extensions ?? [];
      if (!declared.includes('x_update')) this.skip();
      const policy = { keys: ['type'], on_conflict: 'ignore', x_update: { active: ['args'] } };
      const options = { retry: { max_attempts: 3, initial_interval: 'PT0S' } };
      const pushed = (await gateway.request('POST', '/ojs/v1/jobs', { type: 'slow.job', args: [1], unique: policy, options })).body.job;
      const fetched = (await fetchJobs(300))[0];
      expect(fetched.started_at).to.be.a('string');
      const update = await gateway.request('POST', '/ojs/v1/jobs', { type: 'slow.job', args: [2], unique: policy, options });
      expect(update.body).to.include({ updated: true });
      expect(update.body.job).to.include({ id: pushed.id, state: 'active', started_at: fetched.started_at });
      await elapse(600);
      expect((await fetchJobs(30_000))[0]).to.include({ id: pushed.id, attempt: 2 });
    });
  });
}

describe("gateway worker signals: the suite's test_directive", function () {
  it("a job's test_directive is no signal outside test mode (a producer cannot stop the workers)", async () => {
    const plain = await startGateway('memory', 'visibility-plain', { testReset: false });
    try {
      const pushed = (
        await plain.request('POST', '/ojs/v1/jobs', { type: 'slow.job', args: [], options: { metadata: { test_directive: 'terminate' } } })
      ).body.job.id as string;
      await plain.request('POST', '/ojs/v1/workers/fetch', { queues: ['default'], worker_id: 'w-prod' });
      const beat = await plain.request('POST', '/ojs/v1/workers/heartbeat', { worker_id: 'w-prod', active_jobs: [pushed] });
      expect(beat.body).to.include({ state: 'running' });
      expect(beat.body.jobs_extended).to.deep.equal([pushed]);
    } finally {
      await plain.close();
    }
  });
});
