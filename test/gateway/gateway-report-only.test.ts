/**
 * A report-only policy over HTTP (`x_report_only` in the PUSH's unique policy, src/report-only.ts)
 * on every backend: the job is always enqueued (201), and the answer says what the policy would
 * have done (`x_would_be`, with the job it would have met, `x_would_be_existing_job_id`); absent
 * when it would have enqueued too. Batches refuse it, naming the field.
 */
import { expect } from 'chai';
import { GATEWAY_BACKENDS, startGateway, type TestGateway } from './gateway-test-server.js';

for (const backend of GATEWAY_BACKENDS) {
  describe(`gateway report-only policies: ${backend}`, function () {
    this.timeout(20_000);
    let gateway: TestGateway;
    before(async () => {
      gateway = await startGateway(backend, 'rep');
    });
    after(async () => {
      await gateway?.close();
    });
    beforeEach(async () => {
      await gateway.reset();
    });

    const push = (unique: Record<string, unknown>, args: unknown[] = [1]) =>
      gateway.request('POST', '/ojs/v1/jobs', { type: 'report.build', args, options: { queue: 'reports', unique } });

    it('PUSH: always 201; x_would_be says what the policy would have done, and whose job it met', async () => {
      const reportOnly = { keys: ['type'], on_conflict: 'reject', x_report_only: true };
      const first = await push(reportOnly);
      expect(first.status, JSON.stringify(first.body)).to.equal(201);
      expect(first.body).to.not.have.property('x_would_be');
      const second = await push(reportOnly, [2]);
      expect(second.status, JSON.stringify(second.body)).to.equal(201);
      expect(second.body).to.deep.include({ x_would_be: 'rejected', x_would_be_existing_job_id: first.body.job.id });
      expect(second.body.job.id).to.not.equal(first.body.job.id);
      const third = await push({ ...reportOnly, on_conflict: 'ignore' }, [3]);
      expect(third.status).to.equal(201);
      expect(third.body).to.deep.include({ x_would_be: 'deduplicated', x_would_be_existing_job_id: first.body.job.id });
      // Enforced later: no report-only job holds the enforced key.
      const enforced = await push({ keys: ['type'], on_conflict: 'reject' }, [4]);
      expect(enforced.status).to.equal(201);
      expect(enforced.body).to.not.have.property('x_would_be');
      expect((await push({ keys: ['type'], on_conflict: 'reject' }, [5])).status).to.equal(409);
      const info = await gateway.request('GET', `/ojs/v1/jobs/${second.body.job.id}`);
      expect(info.status).to.equal(200);
    });

    it('x_successor is refused over HTTP on every backend, naming the field, nothing enqueued', async () => {
      // The memory backend and the BullMQ adapter implement it, but the gateway keeps no successor's
      // envelope yet (server/unserved-extensions.ts).
      const reply = await push({ keys: ['type'], states: ['active', 'available'], on_conflict: 'ignore', x_successor: 'latest' });
      expect(reply.status, JSON.stringify(reply.body)).to.equal(400);
      expect(JSON.stringify(reply.body)).to.contain('x_successor');
      const stats = await gateway.request('GET', '/ojs/v1/queues/reports/stats');
      expect(JSON.stringify(stats.body)).to.not.match(/"available":[1-9]/);
    });

    it('a report-only mark that is not a boolean is refused, naming the field', async () => {
      const reply = await push({ keys: ['type'], x_report_only: 'yes' });
      expect(reply.status).to.equal(400);
      expect(JSON.stringify(reply.body)).to.contain('x_report_only');
    });
  });
}
