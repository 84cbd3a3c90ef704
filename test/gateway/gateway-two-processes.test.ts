/**
 * Two gateway processes over one Redis prefix or one database behave as one server: the §14
 * unique-jobs scenarios, the batch scenarios, the workflow scenarios, the public conformance suite's unique and bulk
 * files, and Idempotency-Key retries, each against two `ojs-unique serve` processes behind a
 * proxy that sends each request to the next process in turn (gateway-process-pair.ts).
 *
 * The worker protocol too: a job one process handed out is renewed, ended and (on Graphile
 * Worker, where the gateway enforces the visibility timeout) failed back at the other.
 *
 * BullMQ and Graphile Worker only: the memory gateway is one process by nature (its jobs are in
 * its memory), so there is no second process to agree with.
 */
import { expect } from 'chai';
import { describeBatch } from './batch-scenarios.js';
import { loadSuites, runConformanceTest, SUITES_DIR } from './ojs-conformance-runner.js';
import { startGatewayPair, type GatewayPair } from './gateway-process-pair.js';
import { describeUniqueJobs } from './unique-jobs-scenarios.js';
import { describeWorkflows } from './workflow-scenarios.js';

const SHARED_FILES = ['level-4-advanced/unique/', 'level-4-advanced/bulk/'];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * One pair per backend for the whole file, reset before each test by every section: two `serve`
 * processes (and, on Graphile Worker, one migration) instead of a pair per section. A section's
 * `close` leaves it running; the file's root hook closes it.
 */
const pairs = new Map<'bullmq' | 'graphile-worker', Promise<GatewayPair>>();
async function filePair(backend: 'bullmq' | 'graphile-worker'): Promise<GatewayPair> {
  let pair = pairs.get(backend);
  if (!pair) pairs.set(backend, (pair = startGatewayPair(backend, 'pair')));
  return { ...(await pair), close: async () => undefined };
}
after(async () => {
  for (const pair of pairs.values()) await (await pair.catch(() => null))?.close();
});

for (const backend of ['bullmq', 'graphile-worker'] as const) {
  describeUniqueJobs(`two gateway processes, §14 unique jobs: ${backend}`, () => filePair(backend), {
    ownEvents: false,
  });

  describeBatch(`two gateway processes, batch all-or-nothing: ${backend}`, () => filePair(backend));

  describeWorkflows(`two gateway processes, workflows: ${backend}`, () => filePair(backend));

  describe(`two gateway processes, the conformance suite's unique and bulk files: ${backend}`, function () {
    this.timeout(60_000);
    const suites = loadSuites().filter(({ file }) => SHARED_FILES.some((prefix) => file.split('\\').join('/').startsWith(prefix)));
    let pair: GatewayPair;
    before(async function () {
      if (suites.length > 0) pair = await filePair(backend);
    });
    after(async () => {
      await pair?.close();
    });
    if (suites.length === 0) {
      it(`skipped: the conformance suites are absent (${SUITES_DIR})`, function () {
        this.skip();
      });
      return;
    }
    for (const { file, test } of suites) {
      it(`${test.test_id} ${file}`, async () => {
        const failures = await runConformanceTest(pair.baseUrl, test, () => pair.reset());
        expect(failures, failures.join('\n')).to.deep.equal([]);
      });
    }
  });

  describe(`two gateway processes, Idempotency-Key: ${backend}`, function () {
    this.timeout(60_000);
    let pair: GatewayPair;
    before(async () => {
      pair = await filePair(backend);
    });
    after(async () => {
      await pair?.close();
    });
    beforeEach(() => pair.reset());
    const available = async () => (await pair.request('GET', '/ojs/v1/queues/default/stats')).body.queue.available as number;

    it('a retry with the key at the other process answers the first response; another body there is 422', async () => {
      const body = { type: 'pair.send', args: [{ to: 'a' }] };
      const headers = { 'idempotency-key': 'pair-key-1' };
      const first = await pair.request('POST', '/ojs/v1/jobs', body, headers);
      const again = await pair.request('POST', '/ojs/v1/jobs', body, headers);
      expect(first.status).to.equal(201);
      expect(again.status).to.equal(201);
      expect(again.body).to.deep.equal(first.body);
      expect(again.headers.get('idempotent-replayed')).to.equal('true');
      const other = await pair.request('POST', '/ojs/v1/jobs', { type: 'pair.send', args: [{ to: 'b' }] }, headers);
      expect(other.status).to.equal(422);
      expect(other.body.error.code).to.equal('x_idempotency_key_reused');
      expect(await available()).to.equal(1);
    });

    it('concurrent requests with one key at both processes enqueue once', async () => {
      const body = { type: 'pair.race', args: [1] };
      const replies = await Promise.all(
        Array.from({ length: 10 }, () => pair.request('POST', '/ojs/v1/jobs', body, { 'idempotency-key': 'pair-race' })),
      );
      const created = replies.filter((reply) => reply.status === 201);
      expect(created.length + replies.filter((reply) => reply.status === 409).length).to.equal(replies.length);
      expect(new Set(created.map((reply) => reply.body.job.id)).size).to.equal(1);
      for (const reply of replies.filter((reply) => reply.status === 409))
        expect(reply.body.error.code).to.equal('x_idempotency_key_in_use');
      expect(await available()).to.equal(1);
    });

    it('a batch retried with its key at the other process answers the first response', async () => {
      const jobs = [
        { type: 'pair.batch', args: [1] },
        { type: 'pair.batch', args: [2] },
      ];
      const first = await pair.request('POST', '/ojs/v1/jobs/batch', { jobs }, { 'idempotency-key': 'pair-batch' });
      const again = await pair.request('POST', '/ojs/v1/jobs/batch', { jobs }, { 'idempotency-key': 'pair-batch' });
      expect(first.status).to.equal(201);
      expect(again.body).to.deep.equal(first.body);
      expect(await available()).to.equal(2);
    });
  });

  describe(`two gateway processes, the worker protocol: ${backend}`, function () {
    this.timeout(60_000);
    let pair: GatewayPair;
    before(async () => {
      pair = await filePair(backend);
    });
    after(async () => {
      await pair?.close();
    });
    beforeEach(() => pair.reset());

    it('a job fetched at one process is renewed at the other, and its first reservation lapsing fails nothing back', async function () {
      const pushed = await pair.at(0, 'POST', '/ojs/v1/jobs', { type: 'pair.work', args: [1] });
      const fetched = await pair.at(0, 'POST', '/ojs/v1/workers/fetch', { queues: ['default'], visibility_timeout_ms: 3000 });
      expect(fetched.body.jobs.map((job: { id: string }) => job.id)).to.deep.equal([pushed.body.job.id]);
      const beat = await pair.at(1, 'POST', '/ojs/v1/workers/heartbeat', { job_id: pushed.body.job.id, visibility_timeout_ms: 30_000 });
      // A machine slower than the 3 s between the fetch and this heartbeat lapsed the job rightly: inconclusive.
      if (beat.status === 409 && beat.body.error.details?.current_state !== 'active') this.skip();
      expect(beat.status, JSON.stringify(beat.body)).to.equal(200);
      await sleep(3500);
      expect((await pair.at(0, 'POST', '/ojs/v1/workers/fetch', { queues: ['default'] })).body.jobs).to.deep.equal([]);
      const ack = await pair.at(0, 'POST', '/ojs/v1/workers/ack', { job_id: pushed.body.job.id });
      expect(ack.status, JSON.stringify(ack.body)).to.equal(200);
      expect(ack.body.state).to.equal('completed');
    });

    if (backend === 'graphile-worker') {
      it('a job whose reservation lapsed at one process is failed back by the other, and fetched again there', async () => {
        const pushed = await pair.at(0, 'POST', '/ojs/v1/jobs', { type: 'pair.lapse', args: [1] });
        await pair.at(0, 'POST', '/ojs/v1/workers/fetch', { queues: ['default'], visibility_timeout_ms: 500 });
        let again: { id: string; attempt: number } | undefined;
        while (!again) {
          await sleep(200);
          again = (await pair.at(1, 'POST', '/ojs/v1/workers/fetch', { queues: ['default'] })).body.jobs[0];
        }
        expect(again).to.include({ id: pushed.body.job.id, attempt: 2 });
        expect((await pair.at(1, 'POST', '/ojs/v1/workers/ack', { job_id: pushed.body.job.id })).status).to.equal(200);
      });
    }
  });
}
