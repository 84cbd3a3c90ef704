/**
 * Batch PUSH is all-or-nothing (ojs-http-binding, batch), against any gateway a test opens: one
 * server (gateway-batch.test.ts) or two processes over one backend (gateway-two-processes.test.ts).
 * On every backend one atomic step (a transaction on Graphile Worker, one script on BullMQ), so a
 * worker fetching throughout a batch that fails never sees one of its jobs and INFO never knows them.
 */
import { expect } from 'chai';
import { uuidv7 } from '../../src/uuid-v7.js';
import type { HttpGateway } from './gateway-test-server.js';

const REJECT = { keys: ['type', 'args'], on_conflict: 'reject' };

export function describeBatch(title: string, open: () => Promise<HttpGateway & { close(): Promise<void> }>): void {
  describe(title, function () {
    this.timeout(30_000);
    let gateway: HttpGateway & { close(): Promise<void> };
    // Starting a gateway (two `serve` processes for the pair) takes seconds on a loaded machine.
    before(async function () {
      this.timeout(90_000);
      gateway = await open();
    });
    after(() => gateway?.close());
    beforeEach(() => gateway.reset());

    const push = (body: unknown) => gateway.request('POST', '/ojs/v1/jobs', body);
    const batch = (jobs: unknown[]) => gateway.request('POST', '/ojs/v1/jobs/batch', { jobs });
    const known = async (ids: string[]) =>
      (await Promise.all(ids.map(async (id) => ((await gateway.request('GET', `/ojs/v1/jobs/${id}`)).status === 200 ? id : null)))).filter(
        Boolean,
      );

    it('a caller-chosen id already taken refuses the whole batch before anything is written', async () => {
      const taken = (await push({ type: 'batch.job', args: [0] })).body.job.id as string;
      const ids = [uuidv7(), uuidv7()];
      const reply = await batch([
        ...ids.map((id, n) => ({ id, type: 'batch.job', args: [n + 1] })),
        { id: taken, type: 'batch.job', args: [9] },
      ]);
      expect(reply.status).to.equal(409);
      expect(reply.body.error).to.include({ code: 'duplicate' });
      expect(reply.body.error.details).to.include({ field: 'jobs[2].id' });
      expect(await known(ids)).to.deep.equal([]);
    });

    it('a batch accepts the policy extensions a single PUSH accepts, and names a bad field where the job wrote it', async () => {
      const manifest = await gateway.request('GET', '/ojs/manifest');
      const declared: string[] = manifest.body.capabilities.unique_jobs.extensions ?? [];
      const policy = { keys: ['type', 'args'], on_conflict: 'ignore', x_update: { available: ['args'] } };
      const single = await push({ type: 'batch.ext', args: [1], options: { unique: policy } });
      const many = await batch([{ type: 'batch.ext', args: [2], options: { unique: policy } }]);
      expect(many.status, JSON.stringify(many.body)).to.equal(single.status === 201 ? 201 : 400);
      expect(single.status).to.equal(declared.includes('x_update') ? 201 : 400);
      const bad = await batch([
        { type: 'batch.ok', args: [1] },
        { type: 'batch.bad', args: [1], options: { unique: { keys: ['nope'] } } },
        { type: 'batch.bad', args: [1], unique: { keys: ['nope'] } },
      ]);
      expect(bad.status).to.equal(400);
      const fields = bad.body.error.details.issues.map((issue: { path: string }) => issue.path);
      expect(fields).to.include('jobs[1].options.unique.keys[0]');
    });

    it('a reject duplicate part-way leaves nothing: a worker fetching throughout never sees one of its jobs, and INFO does not know them', async () => {
      const existing = (await push({ type: 'batch.job', args: ['held'], options: { unique: REJECT } })).body.job.id as string;
      const ids = Array.from({ length: 200 }, () => uuidv7());
      const jobs = [
        ...ids.map((id, n) => ({ id, type: 'batch.job', args: [n] })),
        { type: 'batch.job', args: ['held'], options: { unique: REJECT } },
      ];
      let settled = false;
      const pending = batch(jobs).finally(() => (settled = true));
      const fetched: string[] = [];
      do {
        const reply = await gateway.request('POST', '/ojs/v1/workers/fetch', { queues: ['default'], count: 100 });
        fetched.push(...(reply.body.jobs as { id: string }[]).map((job) => job.id));
      } while (!settled);
      const reply = await pending;
      expect(reply.status).to.equal(409);
      expect(reply.body.error.details).to.include({ existing_job_id: existing });
      expect(fetched.filter((id) => id !== existing)).to.deep.equal([]);
      expect(await known(ids)).to.deep.equal([]);
      const stats = (await gateway.request('GET', '/ojs/v1/queues/default/stats')).body.queue;
      expect(stats.available + stats.active + stats.cancelled).to.equal(1);
    });
  });
}
