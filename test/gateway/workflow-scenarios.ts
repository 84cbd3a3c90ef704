/**
 * Workflow scenarios the conformance suite does not cover, against any gateway (one in-process
 * server, or two processes behind a round-robin proxy: gateway-process-pair.ts): acks and nacks
 * of one workflow's jobs sent at once (a batch's callbacks released once, a chain advanced once,
 * a group ended once), cancellation of a chain whose step is running, and the refusals, each
 * naming its field.
 */
import { expect } from 'chai';
import type { HttpGateway, Reply } from './gateway-test-server.js';

type Gateway = HttpGateway & { close(): Promise<void> };

const job = (type: string, queue: string, extra: Record<string, unknown> = {}) => ({
  type,
  args: [{ type }],
  options: { queue, ...extra },
});

export function describeWorkflows(title: string, start: () => Promise<Gateway>): void {
  describe(title, function () {
    this.timeout(60_000);
    let gateway: Gateway;
    // Starting a gateway (two `serve` processes for the pair) takes seconds on a loaded machine.
    before(async function () {
      this.timeout(90_000);
      gateway = await start();
    });
    after(async () => {
      await gateway?.close();
    });
    beforeEach(async () => {
      await gateway.reset();
    });

    const post = (body: unknown) => gateway.request('POST', '/ojs/v1/workflows', body);
    const fetchJobs = async (queue: string, count = 10): Promise<any[]> => {
      const reply = await gateway.request('POST', '/ojs/v1/workers/fetch', { queues: [queue], count, worker_id: 'w' });
      expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
      return reply.body.jobs;
    };
    const ack = (id: string, result: unknown) => gateway.request('POST', '/ojs/v1/workers/ack', { job_id: id, result });
    const workflow = async (id: string) => {
      const reply = await gateway.request('GET', `/ojs/v1/workflows/${id}`);
      expect(reply.status, JSON.stringify(reply.body)).to.equal(200);
      return reply.body.workflow;
    };

    it("a batch's jobs acked at once (alternating processes) release each callback once, with every result by index", async () => {
      const created = await post({
        type: 'batch',
        name: 'race',
        jobs: Array.from({ length: 6 }, (_, index) => job(`wf.race_${index}`, 'wf-race')),
        callbacks: { on_complete: job('wf.race_done', 'wf-race-done'), on_success: job('wf.race_ok', 'wf-race-ok') },
      });
      expect(created.status, JSON.stringify(created.body)).to.equal(201);
      const ids: string[] = created.body.workflow.jobs.map((entry: { job_id: string }) => entry.job_id);
      const fetched = await fetchJobs('wf-race');
      expect(fetched).to.have.length(6);
      const acks = await Promise.all(fetched.map((one) => ack(one.id, { from: one.id })));
      expect(acks.map((reply) => reply.status)).to.deep.equal([200, 200, 200, 200, 200, 200]);
      // Readers at once too: a reconcile racing the settles must not release anything again.
      await Promise.all([workflow(created.body.workflow.id), workflow(created.body.workflow.id)]);
      const done = await fetchJobs('wf-race-done');
      const ok = await fetchJobs('wf-race-ok');
      expect(done.map((one) => one.type)).to.deep.equal(['wf.race_done']);
      expect(ok.map((one) => one.type)).to.deep.equal(['wf.race_ok']);
      expect(done[0].parent_results).to.deep.equal(ids.map((id) => ({ from: id })));
      expect(done[0].workflow_id).to.equal(created.body.workflow.id);
      const running = await workflow(created.body.workflow.id);
      expect([running.state, running.jobs_completed, running.callbacks.on_complete.state]).to.deep.equal(['running', 6, 'active']);
      expect((await ack(done[0].id, null)).status).to.equal(200);
      expect((await ack(ok[0].id, null)).status).to.equal(200);
      const ended = await workflow(created.body.workflow.id);
      expect([ended.state, ended.metadata.completed_count, ended.metadata.failed_count]).to.deep.equal(['completed', 6, 0]);
    });

    it('a chain step acked at two processes at once advances the chain once', async () => {
      const created = await post({ type: 'chain', steps: [job('wf.s0', 'wf-chain'), job('wf.s1', 'wf-chain'), job('wf.s2', 'wf-chain')] });
      expect(created.status, JSON.stringify(created.body)).to.equal(201);
      const id = created.body.workflow.id;
      expect(created.body.workflow.steps.map((step: { state: string }) => step.state)).to.deep.equal(['pending', 'waiting', 'waiting']);
      const [first] = await fetchJobs('wf-chain');
      const statuses = (await Promise.all([ack(first.id, { n: 0 }), ack(first.id, { n: 0 })])).map((reply) => reply.status).sort();
      expect(statuses).to.deep.equal([200, 409]);
      await Promise.all([workflow(id), workflow(id)]);
      const next = await fetchJobs('wf-chain');
      expect(next.map((one) => one.type)).to.deep.equal(['wf.s1']);
      expect(next[0].parent_results).to.deep.equal([{ n: 0 }]);
      const now = await workflow(id);
      expect([now.state, now.steps_completed, now.steps.map((step: { state: string }) => step.state)]).to.deep.equal([
        'running',
        1,
        ['completed', 'active', 'waiting'],
      ]);
    });

    it("a group's jobs acked and nacked at once: the group fails once all have ended, its jobs untouched", async () => {
      const created = await post({ type: 'group', jobs: Array.from({ length: 4 }, (_, index) => job(`wf.g${index}`, 'wf-group')) });
      const id = created.body.workflow.id;
      const fetched = await fetchJobs('wf-group');
      expect(fetched).to.have.length(4);
      const replies = await Promise.all(
        fetched.map((one, index) =>
          index % 2 === 0
            ? ack(one.id, { index })
            : gateway.request('POST', '/ojs/v1/workers/nack', {
                job_id: one.id,
                error: { code: 'handler_error', message: 'no', retryable: false },
              }),
        ),
      );
      expect(replies.map((reply) => reply.status)).to.deep.equal([200, 200, 200, 200]);
      const ended = await workflow(id);
      expect([ended.state, ended.jobs_completed, ended.jobs_failed, ended.failed_job_ids.length]).to.deep.equal(['failed', 2, 2, 2]);
    });

    it('cancelling a chain whose step is running lets the step finish and enqueues no later step', async () => {
      const created = await post({ type: 'chain', steps: [job('wf.c0', 'wf-cancel'), job('wf.c1', 'wf-cancel')] });
      const id = created.body.workflow.id;
      const [first] = await fetchJobs('wf-cancel');
      const cancelled = await gateway.request('DELETE', `/ojs/v1/workflows/${id}`);
      expect([cancelled.status, cancelled.body.workflow.state]).to.deep.equal([200, 'cancelled']);
      expect((await ack(first.id, { n: 0 })).status).to.equal(200);
      expect(await fetchJobs('wf-cancel')).to.deep.equal([]);
      const now = await workflow(id);
      expect([now.state, now.steps_completed, now.steps[1].state]).to.deep.equal(['cancelled', 1, 'cancelled']);
      const again = await gateway.request('DELETE', `/ojs/v1/workflows/${id}`);
      expect([again.status, again.body.error.code]).to.deep.equal([409, 'conflict']);
    });

    it('an unknown workflow is 404 not_found on GET and DELETE', async () => {
      for (const method of ['GET', 'DELETE']) {
        const reply: Reply = await gateway.request(method, '/ojs/v1/workflows/019414d4-dddd-7000-8000-000000000001');
        expect([reply.status, reply.body.error.code, reply.body.error.details.resource_type]).to.deep.equal([404, 'not_found', 'workflow']);
      }
    });

    const refusals: [string, unknown, string][] = [
      ['an empty chain', { type: 'chain', steps: [] }, 'steps'],
      ['an unknown primitive', { type: 'dag', jobs: [job('wf.a', 'q')] }, 'type'],
      ['the dependency-graph form', { name: 'x', steps: [{ id: 'a', type: 'wf.a', args: [], depends_on: [] }] }, 'type'],
      ['a nested workflow', { type: 'group', jobs: [{ type: 'chain', steps: [job('wf.a', 'q')] }] }, 'jobs[0]'],
      ['a unique step', { type: 'chain', steps: [job('wf.a', 'q', { unique: { keys: ['type'] } })] }, 'steps[0].options.unique'],
      ['a batch without callbacks', { type: 'batch', jobs: [job('wf.a', 'q')], callbacks: {} }, 'callbacks'],
      ['a bad job type', { type: 'group', jobs: [job('wf.a', 'q'), { type: 'Bad Type', args: [] }] }, 'jobs[1].type'],
      [
        'a bad callback queue',
        { type: 'batch', jobs: [job('wf.a', 'q')], callbacks: { on_failure: job('wf.f', 'Bad:Queue') } },
        'callbacks.on_failure.options.queue',
      ],
      [
        'max_attempts out of range',
        { type: 'chain', steps: [job('wf.a', 'q'), job('wf.b', 'q', { retry: { max_attempts: 0 } })] },
        'steps[1].options.retry.max_attempts',
      ],
    ];
    for (const [what, body, field] of refusals) {
      it(`refuses ${what}: 400 invalid_workflow naming ${field}, nothing enqueued`, async () => {
        const reply = await post(body);
        expect([reply.status, reply.body.error?.code, reply.body.error?.details?.field], JSON.stringify(reply.body)).to.deep.equal([
          400,
          'invalid_workflow',
          field,
        ]);
        expect(await fetchJobs('q')).to.deep.equal([]);
      });
    }
  });
}
