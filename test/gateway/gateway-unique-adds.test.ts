/**
 * The gateway's unique adds on every backend: each PUSH with a policy is counted once in
 * `ojs.unique.adds` (by the backend it goes through, never again by the gateway), and the queue's
 * stats carry the same counts per outcome (`unique_adds`). An in-memory metric reader.
 */
import { expect } from 'chai';
import { DuplicateJobError } from '../../src/index.js';
import { UNIQUE_ADD_OUTCOMES } from '../../src/unique-add-telemetry.js';
import { useTelemetryCapture } from '../telemetry/telemetry-capture.js';
import { addInBatches, addOneByOne, expectScenarioCounted, type TelemetryJob } from '../telemetry/unique-add-scenario.js';
import { GATEWAY_BACKENDS, startGateway, type TestGateway } from './gateway-test-server.js';

const QUEUE = 'mail';

for (const backend of GATEWAY_BACKENDS) {
  describe(`gateway unique adds (metric and queue stats): ${backend}`, function () {
    this.timeout(20_000);
    const capture = useTelemetryCapture();
    let gateway: TestGateway;
    before(async () => {
      gateway = await startGateway(backend, 'tel', { countDuplicates: true });
    });
    after(async () => {
      await gateway?.close();
    });
    beforeEach(async () => {
      await gateway.reset();
    });

    const body = (job: TelemetryJob) => ({
      type: job.type,
      args: [job.args],
      meta: job.meta,
      options: { queue: QUEUE, unique: job.unique },
    });
    /** A 409's duplicate, thrown as the backend's error (the scenario expects it of a rejected add). */
    const refusal = (reply: {
      body: { error: { details: { existing_job_id: string; existing_job_state: never; uniqueness_key: string } } };
    }) => {
      const details = reply.body.error.details;
      return new DuplicateJobError({
        existingJobId: details.existing_job_id,
        existingJobState: details.existing_job_state,
        uniquenessKey: details.uniqueness_key,
      });
    };
    const push = async (job: TelemetryJob) => {
      const reply = await gateway.request('POST', '/ojs/v1/jobs', body(job));
      if (reply.status === 409) throw refusal(reply);
      expect(reply.status, JSON.stringify(reply.body)).to.be.oneOf([200, 201]);
    };
    const pushBatch = async (jobs: readonly TelemetryJob[]) => {
      const reply = await gateway.request('POST', '/ojs/v1/jobs/batch', { jobs: jobs.map(body) });
      if (reply.status === 409) throw refusal(reply);
      expect(reply.status, JSON.stringify(reply.body)).to.equal(201);
    };
    /** The stats' `unique_adds` of a queue, and what the metric holds for it, per outcome. */
    const countsOf = async (queue: string) => {
      const stats = await gateway.request('GET', `/ojs/v1/queues/${queue}/stats`);
      expect(stats.body.unique_adds).to.deep.equal(stats.body.queue.unique_adds);
      const metric = Object.fromEntries(UNIQUE_ADD_OUTCOMES.map((outcome) => [outcome, 0]));
      for (const { attributes, value } of await capture.adds()) {
        if (attributes['messaging.destination.name'] === queue) metric[attributes['ojs.unique.outcome'] as string]! += value;
      }
      return { stats: stats.body.unique_adds, metric };
    };

    it('PUSH: each unique PUSH counted once in the metric, the stats carrying the same counts', async function () {
      await addOneByOne(push);
      await expectScenarioCounted(capture, backend, QUEUE);
      const { stats, metric } = await countsOf(QUEUE);
      expect(stats).to.deep.equal({ created: 5, deduplicated: 1, updated: 1, replaced: 1, rejected: 1 });
      expect(stats).to.deep.equal(metric);
      // Another queue's stats: none of these.
      expect((await countsOf('other')).stats).to.deep.equal({ created: 0, deduplicated: 0, updated: 0, replaced: 0, rejected: 0 });
    });

    it('PUSH batch: each job counted once; a batch a duplicate refused counts only the rejected job, in the metric and the stats', async function () {
      await addInBatches(pushBatch, true);
      await expectScenarioCounted(capture, backend, QUEUE);
      const { stats, metric } = await countsOf(QUEUE);
      expect(stats).to.deep.equal({ created: 5, deduplicated: 1, updated: 1, replaced: 1, rejected: 1 });
      expect(stats).to.deep.equal(metric);
    });

    it("a deduplicated PUSH counts on the job it met: the PUSH's job and GET /jobs/:id carry duplicate_count and last_duplicate_at", async function () {
      const job = { type: 'tel.dup', args: [{ n: 1 }], options: { queue: QUEUE, unique: { keys: ['type'], on_conflict: 'ignore' } } };
      const first = await gateway.request('POST', '/ojs/v1/jobs', job);
      expect(first.body.job).to.not.have.any.keys('duplicate_count', 'last_duplicate_at');
      const again = await gateway.request('POST', '/ojs/v1/jobs', job);
      expect(again.body.job).to.include({ id: first.body.job.id, duplicate_count: 1 });
      expect(Date.parse(again.body.job.last_duplicate_at)).to.be.at.least(Date.parse(first.body.job.created_at));
      const read = await gateway.request('GET', `/ojs/v1/jobs/${first.body.job.id}`);
      expect(read.body.job).to.include({ duplicate_count: 1, last_duplicate_at: again.body.job.last_duplicate_at });
    });

    it('without --count-duplicates (the default) a deduplicated PUSH counts nothing: neither field in the JSON', async function () {
      const plain = await startGateway(backend, 'tel-off');
      try {
        await plain.reset();
        const job = { type: 'tel.off', args: [{ n: 1 }], options: { queue: QUEUE, unique: { keys: ['type'], on_conflict: 'ignore' } } };
        const first = await plain.request('POST', '/ojs/v1/jobs', job);
        const again = await plain.request('POST', '/ojs/v1/jobs', job);
        expect(again.body.job.id).to.equal(first.body.job.id);
        expect(again.body.job).to.not.have.any.keys('duplicate_count', 'last_duplicate_at');
        const read = await plain.request('GET', `/ojs/v1/jobs/${first.body.job.id}`);
        expect(read.body.job).to.not.have.any.keys('duplicate_count', 'last_duplicate_at');
      } finally {
        await plain.close();
      }
    });

    it('a plain PUSH (no policy) is not counted; the test reset clears the stats', async function () {
      await gateway.request('POST', '/ojs/v1/jobs', { type: 'plain', args: [], options: { queue: QUEUE } });
      await push({ type: 'tel.one', args: { account: 'a', n: 1 }, meta: { note: 'n' }, unique: {} });
      expect((await countsOf(QUEUE)).stats).to.include({ created: 1 });
      await gateway.reset();
      expect((await countsOf(QUEUE)).stats).to.include({ created: 0 });
    });
  });
}
