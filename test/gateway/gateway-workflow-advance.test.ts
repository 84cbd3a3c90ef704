/**
 * The workflow record's compare-and-swap under contention: the jobs of one batch settled all at
 * once through two stores over one backend (two gateway processes: one Redis prefix, one pair of
 * Graphile schemas; memory's one store with the settles interleaved), each outcome recorded once
 * and the callback released once. Through HTTP (workflow-scenarios.ts) the acks' own round trips
 * mostly keep the settles apart; here they meet.
 */
import { expect } from 'chai';
import type { GatewayJob, GatewayStore } from '../../server/gateway-store.js';
import { settleWorkflowJob } from '../../server/workflow-advance.js';
import { newWorkflowRecord } from '../../server/workflow-record.js';
import { uuidv7 } from '../../src/uuid-v7.js';
import { GATEWAY_BACKENDS, gatewayNames, makeStore } from './gateway-test-server.js';

const JOBS = 30;

for (const backend of GATEWAY_BACKENDS) {
  describe(`workflow settles at once: ${backend}`, function () {
    this.timeout(60_000);
    let stores: GatewayStore[];
    before(() => {
      const names = gatewayNames('wf-advance');
      const first = makeStore(backend, names);
      stores = backend === 'memory' ? [first, first] : [first, makeStore(backend, names)];
    });
    after(async () => {
      for (const store of new Set(stores)) await store.close();
    });
    beforeEach(async () => {
      await stores[0]!.reset();
    });

    /** A batch of JOBS jobs with an on_complete callback, its record stored (the jobs themselves are not needed to settle them). */
    const batch = async () => {
      const input = (type: string, queue: string) => ({ id: uuidv7(), type, args: [], queue, extras: { envelope: {} } });
      const jobs = Array.from({ length: JOBS }, (_, index) => input(`wf.job_${index}`, 'wf-advance'));
      const record = newWorkflowRecord(uuidv7(), 'batch', null, jobs, { on_complete: input('wf.done', 'wf-advance-done') }, new Date());
      await stores[0]!.workflows.create(record);
      return record;
    };
    const ended = (id: string, index: number) => ({ id, state: 'completed', result: { index } }) as unknown as GatewayJob;

    it('every outcome is recorded once and the callback released once', async () => {
      const record = await batch();
      // Each job settled twice, through both stores: the second settle of a job changes nothing.
      await Promise.all(
        record.jobs.flatMap((entry, index) => [
          settleWorkflowJob(stores[index % 2]!, ended(entry.job_id, index)),
          settleWorkflowJob(stores[(index + 1) % 2]!, ended(entry.job_id, index)),
        ]),
      );
      const stored = (await stores[1]!.workflows.read(record.id))!;
      expect(stored.record.jobs.map((entry) => [entry.status, entry.result])).to.deep.equal(
        record.jobs.map((_, index) => ['completed', { index }]),
      );
      expect(stored.record.callbacks.on_complete!.status).to.equal('enqueued');
      // One write per job's settle, and one to create: no write lost, none doubled.
      expect(stored.version).to.equal(JOBS + 1);
      const callbacks = await stores[0]!.fetch({ queues: ['wf-advance-done'], count: 10, workerId: null, visibilityTimeoutMs: 30_000 });
      expect(callbacks.map((job) => [job.id, job.envelope.parent_results])).to.deep.equal([
        [stored.record.callbacks.on_complete!.job_id, record.jobs.map((_, index) => ({ index }))],
      ]);
    });
  });
}
