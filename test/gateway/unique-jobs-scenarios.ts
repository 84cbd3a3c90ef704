/**
 * The unique-jobs spec's §14 conformance list (11 scenarios) over HTTP, against any gateway a
 * test opens: one server (gateway-unique-jobs.test.ts) or two processes over one backend
 * (gateway-two-processes.test.ts). Reset before each test.
 */
import { expect } from 'chai';
import type { HttpGateway } from './gateway-test-server.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface UniqueJobsScenarioOptions {
  /**
   * Whether every request meets the same events listing (GET /ojs/v1/events). The listing is each
   * process's own record, so two processes each list what went through them: the event test is
   * left out there.
   */
  ownEvents: boolean;
}

export function describeUniqueJobs(
  title: string,
  open: () => Promise<HttpGateway & { close(): Promise<void> }>,
  scenario: UniqueJobsScenarioOptions,
): void {
  describe(title, function () {
    this.timeout(20_000);
    let gateway: HttpGateway & { close(): Promise<void> };
    // Starting a gateway (two `serve` processes for the pair) takes seconds on a loaded machine.
    before(async function () {
      this.timeout(90_000);
      gateway = await open();
    });
    after(async () => {
      await gateway?.close();
    });
    beforeEach(async () => {
      await gateway.reset();
    });
    const push = (type: string, args: unknown[], unique: unknown, options: Record<string, unknown> = {}) =>
      gateway.request('POST', '/ojs/v1/jobs', { type, args, options: { ...options, unique } });
    const fetchOne = async (queue = 'default') =>
      (await gateway.request('POST', '/ojs/v1/workers/fetch', { queues: [queue] })).body.jobs[0];

    it('§14.1 basic deduplication: the second identical reject enqueue is 409 duplicate', async () => {
      const policy = { keys: ['type', 'args'], on_conflict: 'reject' };
      const first = await push('email.send', [{ to: 'a@example.com' }], policy);
      const second = await push('email.send', [{ to: 'a@example.com' }], policy);
      expect(first.status).to.equal(201);
      expect(second.status).to.equal(409);
      expect(second.body.error.code).to.equal('duplicate');
      expect(second.body.error.details).to.include({ existing_job_id: first.body.job.id, existing_job_state: 'available' });
      expect(second.body.error.details.uniqueness_key).to.equal(first.body.job.uniqueness_key);
    });

    it('§14.2 args-key filtering: same args_keys values, other args differ: duplicate (also spelled `key`, as the JS SDK does)', async () => {
      const first = await push('order.sync', [{ order_id: 7, note: 'a' }], { keys: ['type', 'args'], args_keys: ['order_id'] });
      const second = await push('order.sync', [{ order_id: 7, note: 'b' }], { key: ['order_id'] });
      expect(first.status).to.equal(201);
      expect(second.status).to.equal(409);
      expect(second.body.error.details.existing_job_id).to.equal(first.body.job.id);
    });

    it('§14.3 period expiry: after the period the same job is enqueued', async () => {
      const policy = { keys: ['type', 'args'], period: 'PT1S' };
      expect((await push('report.build', [{ day: 1 }], policy)).status).to.equal(201);
      expect((await push('report.build', [{ day: 1 }], policy)).status).to.equal(409);
      await sleep(1200);
      expect((await push('report.build', [{ day: 1 }], policy)).status).to.equal(201);
    });

    it('§14.4 state filtering: a completed job is no duplicate under the default states', async () => {
      const policy = { keys: ['type', 'args'] };
      const first = await push('invoice.send', [{ id: 1 }], policy);
      expect((await fetchOne()).id).to.equal(first.body.job.id);
      expect((await gateway.request('POST', '/ojs/v1/workers/ack', { job_id: first.body.job.id })).status).to.equal(200);
      expect((await push('invoice.send', [{ id: 1 }], policy)).status).to.equal(201);
    });

    it('§14.5 state filtering with terminal states: states including completed keep the completed job a duplicate', async () => {
      const policy = { keys: ['type', 'args'], states: ['available', 'active', 'completed'] };
      const first = await push('invoice.send', [{ id: 2 }], policy);
      await fetchOne();
      await gateway.request('POST', '/ojs/v1/workers/ack', { job_id: first.body.job.id });
      const again = await push('invoice.send', [{ id: 2 }], policy);
      expect(again.status).to.equal(409);
      expect(again.body.error.details).to.include({ existing_job_id: first.body.job.id, existing_job_state: 'completed' });
    });

    it('§14.6 replace: the original is cancelled and the new job enqueued (201)', async () => {
      const policy = { keys: ['type'], on_conflict: 'replace' };
      const first = await push('cache.warm', [{ v: 1 }], policy);
      const second = await push('cache.warm', [{ v: 2 }], policy);
      expect(second.status).to.equal(201);
      expect(second.body.job.id).to.not.equal(first.body.job.id);
      expect(second.body.replaced_job_id).to.equal(first.body.job.id);
      expect((await gateway.request('GET', `/ojs/v1/jobs/${first.body.job.id}`)).body.job.state).to.equal('cancelled');
    });

    if (scenario.ownEvents) {
      it('replace meeting several duplicates: the oldest is replaced_job_id, and each live one cancelled gets its job.cancelled event', async () => {
        // A completed job and a live one under one key: the live one was added by a policy not counting completed.
        const counting = { keys: ['type'], states: ['available', 'active', 'completed'] };
        const done = await push('cache.rebuild', [{ v: 1 }], counting);
        expect((await fetchOne()).id).to.equal(done.body.job.id);
        await gateway.request('POST', '/ojs/v1/workers/ack', { job_id: done.body.job.id });
        const live = await push('cache.rebuild', [{ v: 2 }], { keys: ['type'] });
        expect(live.status).to.equal(201);
        const replacing = await push('cache.rebuild', [{ v: 3 }], { ...counting, on_conflict: 'replace' });
        expect(replacing.status).to.equal(201);
        expect(replacing.body.replaced_job_id).to.equal(done.body.job.id);
        const cancelled = (await gateway.request('GET', '/ojs/v1/events?types=job.cancelled')).body.events as {
          data: { job_id: string; replaced_by: string };
        }[];
        expect(cancelled.map((event) => [event.data.job_id, event.data.replaced_by])).to.deep.equal([
          [live.body.job.id, replacing.body.job.id],
        ]);
        expect((await gateway.request('GET', `/ojs/v1/jobs/${done.body.job.id}`)).body.job.state).to.equal('completed');
      });
    }

    it('§14.7 ignore: 200 with the original job and deduplicated: true', async () => {
      const policy = { keys: ['type', 'args'], on_conflict: 'ignore' };
      const first = await push('webhook.process', [{ event: 'e1' }], policy);
      const second = await push('webhook.process', [{ event: 'e1' }], policy);
      expect(second.status).to.equal(200);
      expect(second.body.deduplicated).to.equal(true);
      expect(second.body.job.id).to.equal(first.body.job.id);
    });

    if (scenario.ownEvents) {
      it('a deduplicated PUSH (single or batch) records a job.deduplicated event naming the existing job', async () => {
        const policy = { keys: ['type', 'args'], on_conflict: 'ignore' };
        const first = await push('webhook.process', [{ event: 'private-event-value' }], policy);
        await push('webhook.process', [{ event: 'private-event-value' }], policy);
        const batch = await gateway.request('POST', '/ojs/v1/jobs/batch', {
          jobs: [{ type: 'webhook.process', args: [{ event: 'private-event-value' }], options: { unique: policy } }],
        });
        expect(batch.body.jobs[0]).to.include({ id: first.body.job.id, deduplicated: true });
        const events = (await gateway.request('GET', '/ojs/v1/events?types=job.deduplicated')).body.events;
        expect(events).to.have.length(2);
        for (const event of events) {
          expect(event.data).to.include({ job_id: first.body.job.id, existing_job_id: first.body.job.id, job_type: 'webhook.process' });
          expect(JSON.stringify(event)).to.not.contain('private-event-value');
        }
        const enqueued = (await gateway.request('GET', '/ojs/v1/events?types=job.enqueued')).body.events;
        expect(enqueued.map((event: { data: { job_id: string } }) => event.data.job_id)).to.deep.equal([first.body.job.id]);
      });
    }

    it('§14.8 queue scoping: keys type+queue on queue a, then queue b: both enqueued', async () => {
      const policy = { keys: ['type', 'queue'] };
      expect((await push('index.rebuild', [], policy, { queue: 'a' })).status).to.equal(201);
      expect((await push('index.rebuild', [], policy, { queue: 'b' })).status).to.equal(201);
      expect((await push('index.rebuild', [], policy, { queue: 'a' })).status).to.equal(409);
    });

    it('§14.9 invalid policy: keys meta without meta_keys is 400 invalid_request naming the field', async () => {
      const reply = await push('audit.log', [{}], { keys: ['meta'] });
      expect(reply.status).to.equal(400);
      expect(reply.body.error.code).to.equal('invalid_request');
      expect(reply.body.error.details.issues.map((issue: { path: string }) => issue.path)).to.include('options.unique.meta_keys');
      const topLevel = await gateway.request('POST', '/ojs/v1/jobs', { type: 'audit.log', args: [{}], unique: { on_conflict: 'merge' } });
      expect(topLevel.status).to.equal(400);
      expect(topLevel.body.error.details.field).to.equal('unique.on_conflict');
    });

    it('§14.10 retry interaction: a retryable job is a duplicate', async () => {
      const policy = { keys: ['type', 'args'] };
      const first = await push('payment.charge', [{ id: 9 }], policy, { retry: { max_attempts: 3, initial_interval: 'PT60S' } });
      await fetchOne();
      const nack = await gateway.request('POST', '/ojs/v1/workers/nack', { job_id: first.body.job.id, error: { message: 'declined' } });
      expect(nack.body.state).to.equal('retryable');
      const again = await push('payment.charge', [{ id: 9 }], policy);
      expect(again.status).to.equal(409);
      expect(again.body.error.details.existing_job_state).to.equal('retryable');
    });

    it('§14.11 concurrent enqueue: of N concurrent reject enqueues of one key exactly one succeeds', async () => {
      const policy = { keys: ['type', 'args'] };
      const replies = await Promise.all(Array.from({ length: 20 }, () => push('sync.run', [{ account: 'x' }], policy)));
      const statuses = replies.map((reply) => reply.status).sort();
      expect(statuses.filter((status) => status === 201)).to.have.length(1);
      expect(statuses.filter((status) => status === 409)).to.have.length(19);
    });

    it('x_update (extension): a duplicate updates the existing job in place where the backend declares it, 400 naming the field where not', async () => {
      const manifest = await gateway.request('GET', '/ojs/manifest');
      const declared: string[] = manifest.body.capabilities.unique_jobs.extensions ?? [];
      const policy = { keys: ['type', 'args'], args_keys: ['account'], on_conflict: 'ignore', x_update: { available: ['args'] } };
      const first = await push('account.sync', [{ account: 'a', full: false }], policy);
      const second = await push('account.sync', [{ account: 'a', full: true }], policy);
      if (!declared.includes('x_update')) {
        expect(first.status).to.equal(400);
        expect(first.body.error.code).to.equal('invalid_request');
        expect(JSON.stringify(first.body.error)).to.contain('x_update');
        return;
      }
      expect(first.status).to.equal(201);
      expect(second.status).to.equal(200);
      expect(second.body).to.include({ updated: true });
      expect(second.body.changed).to.deep.equal(['args']);
      expect(second.body.job.id).to.equal(first.body.job.id);
      const info = await gateway.request('GET', `/ojs/v1/jobs/${first.body.job.id}`);
      expect(info.body.job.args).to.deep.equal([{ account: 'a', full: true }]);
    });

    it('batch: all-or-nothing, a reject duplicate part-way cancels the jobs the batch created before it (409)', async () => {
      const policy = { keys: ['type', 'args'] };
      const existing = await push('batch.item', [{ n: 2 }], policy);
      const batch = await gateway.request('POST', '/ojs/v1/jobs/batch', {
        jobs: [1, 2, 3].map((n) => ({ type: 'batch.item', args: [{ n }], options: { unique: policy } })),
      });
      expect(batch.status).to.equal(409);
      expect(batch.body.error.details.existing_job_id).to.equal(existing.body.job.id);
      const stats = await gateway.request('GET', '/ojs/v1/queues/default/stats');
      expect(stats.body.queue).to.include({ available: 1 });
      expect(await fetchOne()).to.include({ id: existing.body.job.id });
    });
  });
}
