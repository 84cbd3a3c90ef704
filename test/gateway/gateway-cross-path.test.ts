/**
 * The gateway beside the host's own producers and workers: a job enqueued over HTTP is processed
 * by the host's worker, a job the host added is fetched and acked over HTTP, and the same logical
 * job enqueued both ways (HTTP and `withUniqueness` / `makeUniqueWorkerUtils`) is one job, since
 * both compute the key over the payload of `argsToPayload` (src/ojs-args-payload.ts).
 */
import { expect } from 'chai';
import { Queue, Worker, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { runOnce, type Task } from 'graphile-worker';
import { argsToPayload, isDuplicateJobError } from '../../src/index.js';
import { withUniqueness } from '../../adapters/bullmq/index.js';
import { makeUniqueWorkerUtils } from '../../adapters/graphile-worker/index.js';
import { REDIS_URL } from '../adapters/bullmq-test-redis.js';
import { makeSubjectPool, databaseUrl, quietLogger } from '../conformance/subjects/graphile-worker.js';
import { startGateway, type TestGateway } from './gateway-test-server.js';

/** Polls until `check` holds: the hosts finish a job asynchronously (no timing is asserted). */
async function eventually(check: () => Promise<boolean>, what: string, limitMs = 10_000): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('gateway cross-path: BullMQ', function () {
  this.timeout(20_000);
  let gateway: TestGateway;
  let redis: Redis;
  const queues: Queue[] = [];
  const queue = (name: string) => {
    const opened = new Queue(name, { connection: redis, prefix: gateway.names.prefix });
    queues.push(opened);
    return opened;
  };
  before(async () => {
    gateway = await startGateway('bullmq', 'cross');
    redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  });
  after(async () => {
    await Promise.all(queues.map((q) => q.close()));
    await gateway?.close();
    await redis?.quit();
  });
  beforeEach(async () => {
    await gateway.reset();
  });

  it("a job POSTed over HTTP is processed by the user's own BullMQ Worker", async () => {
    const pushed = await gateway.request('POST', '/ojs/v1/jobs', {
      type: 'email.send',
      args: [{ to: 'a@example.com' }],
      options: { queue: 'mail' },
    });
    expect(pushed.status).to.equal(201);
    const seen: Job[] = [];
    const worker = new Worker(
      'mail',
      async (job) => {
        seen.push(job);
        return { sent: job.data.to };
      },
      { connection: redis, prefix: gateway.names.prefix },
    );
    try {
      await eventually(
        async () => (await gateway.request('GET', `/ojs/v1/jobs/${pushed.body.job.id}`)).body.job.state === 'completed',
        'completion',
      );
    } finally {
      await worker.close();
    }
    expect(seen.map((job) => [job.id, job.name, job.data])).to.deep.equal([[pushed.body.job.id, 'email.send', { to: 'a@example.com' }]]);
    const info = await gateway.request('GET', `/ojs/v1/jobs/${pushed.body.job.id}`);
    expect(info.body.job.result).to.deep.equal({ sent: 'a@example.com' });
  });

  it('a job added with queue.add is visible to INFO and fetched and acked over HTTP', async () => {
    const added = await queue('mail').add('email.send', { to: 'b@example.com' });
    const info = await gateway.request('GET', `/ojs/v1/jobs/${added.id}`);
    expect(info.status).to.equal(200);
    expect(info.body.job).to.include({ type: 'email.send', queue: 'mail', state: 'available' });
    expect(info.body.job.args).to.deep.equal([{ to: 'b@example.com' }]);
    const fetched = await gateway.request('POST', '/ojs/v1/workers/fetch', { queues: ['mail'] });
    expect(fetched.body.jobs.map((job: { id: string }) => job.id)).to.deep.equal([added.id]);
    const acked = await gateway.request('POST', '/ojs/v1/workers/ack', { job_id: added.id, result: { ok: true } });
    expect(acked.body.state).to.equal('completed');
    expect(await (await queue('mail').getJob(added.id!))!.getState()).to.equal('completed');
  });

  it('a job added to a queue the gateway never served is visible to INFO and fetchable', async () => {
    const added = await queue('fresh-queue').add('report.build', { day: 3 });
    const info = await gateway.request('GET', `/ojs/v1/jobs/${added.id}`);
    expect(info.status).to.equal(200);
    expect(info.body.job).to.include({ queue: 'fresh-queue', state: 'available' });
    const other = await queue('fresh-queue-2').add('report.build', { day: 4 });
    const fetched = await gateway.request('POST', '/ojs/v1/workers/fetch', { queues: ['fresh-queue-2'] });
    expect(fetched.body.jobs.map((job: { id: string }) => job.id)).to.deep.equal([other.id]);
  });

  it('the same job enqueued with withUniqueness and over HTTP is one job, in either order', async () => {
    const unique = { keys: ['type', 'args'] as ('type' | 'args')[], args_keys: ['order_id'] };
    const host = withUniqueness(queue('orders'));
    const first = await host.add('order.ship', { order_id: 1, note: 'host' }, { unique });
    const viaHttp = await gateway.request('POST', '/ojs/v1/jobs', {
      type: 'order.ship',
      args: [{ order_id: 1, note: 'http' }],
      options: { queue: 'orders', unique },
    });
    expect(viaHttp.status).to.equal(409);
    expect(viaHttp.body.error.details.existing_job_id).to.equal(first.id);

    const second = await gateway.request('POST', '/ojs/v1/jobs', {
      type: 'order.ship',
      args: [{ order_id: 2 }],
      options: { queue: 'orders', unique },
    });
    expect(second.status).to.equal(201);
    const error = await host.add('order.ship', { order_id: 2 }, { unique }).then(
      () => null,
      (caught: unknown) => caught,
    );
    expect(isDuplicateJobError(error) && error.existingJobId).to.equal(second.body.job.id);
    expect(await queue('orders').getJobCountByTypes('wait', 'prioritized')).to.equal(2);
  });
});

describe('gateway cross-path: Graphile Worker', function () {
  this.timeout(30_000);
  let gateway: TestGateway;
  const pool = makeSubjectPool(databaseUrl(), 4);
  const runTasks = (taskList: Record<string, Task>) =>
    runOnce({ pgPool: pool, schema: gateway.names.graphileSchema, taskList, logger: quietLogger } as never);
  before(async () => {
    gateway = await startGateway('graphile-worker', 'cross');
  });
  after(async () => {
    await gateway?.close();
    await pool.end();
  });
  beforeEach(async () => {
    await gateway.reset();
  });
  const utils = () =>
    makeUniqueWorkerUtils({ pgPool: pool, schema: gateway.names.graphileSchema, uniqueSchema: gateway.names.uniqueSchema });

  it("a job POSTed over HTTP is run by the user's own Graphile task runner", async () => {
    const pushed = await gateway.request('POST', '/ojs/v1/jobs', { type: 'email_send', args: [{ to: 'a@example.com' }] });
    expect(pushed.status, JSON.stringify(pushed.body)).to.equal(201);
    const payloads: unknown[] = [];
    await runTasks({ email_send: async (payload) => void payloads.push(payload) });
    expect(payloads).to.deep.equal([{ to: 'a@example.com' }]);
    await eventually(
      async () => (await gateway.request('GET', `/ojs/v1/jobs/${pushed.body.job.id}`)).body.job.state === 'completed',
      'completion',
    );
  });

  it("a job added with makeUniqueWorkerUtils' addJob, and one with Graphile's own addJob, are fetched and acked over HTTP", async () => {
    const workerUtils = await utils();
    try {
      const recorded = await workerUtils.addJob('report_build', { day: 1 }, { unique: { keys: ['type', 'args'] } });
      const plain = await workerUtils.addJob('report_build', { day: 2 });
      const fetched = await gateway.request('POST', '/ojs/v1/workers/fetch', { queues: ['default'], count: 10 });
      const ids = fetched.body.jobs.map((job: { id: string }) => job.id);
      // A job Graphile's own addJob added has no OJS id of its own: its id is Graphile's.
      expect(ids).to.have.members([recorded.job.id, String(plain.id)]);
      for (const id of ids) expect((await gateway.request('POST', '/ojs/v1/workers/ack', { job_id: id })).body.state).to.equal('completed');
      // Nothing is left for a Graphile runner.
      const ran: unknown[] = [];
      await runTasks({ report_build: async (payload) => void ran.push(payload) });
      expect(ran).to.deep.equal([]);
    } finally {
      await workerUtils.release();
    }
  });

  it("a job added with Graphile's own addJob is cancelled as Graphile removes it: 200 cancelled unlocked, 409 while a worker holds it", async () => {
    const workerUtils = await utils();
    try {
      const waiting = String((await workerUtils.addJob('report_build', { day: 3 })).id);
      expect((await gateway.request('GET', `/ojs/v1/jobs/${waiting}`)).body.job).to.include({ state: 'available' });
      const cancelled = await gateway.request('DELETE', `/ojs/v1/jobs/${waiting}`);
      expect(cancelled.status, JSON.stringify(cancelled.body)).to.equal(200);
      expect(cancelled.body.job).to.include({ id: waiting, state: 'cancelled', previous_state: 'available' });
      expect((await gateway.request('GET', `/ojs/v1/jobs/${waiting}`)).status).to.equal(404);
      const held = String((await workerUtils.addJob('report_build', { day: 4 })).id);
      expect((await gateway.request('POST', '/ojs/v1/workers/fetch', { queues: ['default'] })).body.jobs[0]).to.include({ id: held });
      const refused = await gateway.request('DELETE', `/ojs/v1/jobs/${held}`);
      expect(refused.status).to.equal(409);
      expect((await gateway.request('POST', '/ojs/v1/workers/ack', { job_id: held })).body.state).to.equal('completed');
    } finally {
      await workerUtils.release();
    }
  });

  it('an HTTP worker and a Graphile runner never both hold a job', async () => {
    const pushed = await gateway.request('POST', '/ojs/v1/jobs', { type: 'slow_task', args: [{ n: 1 }] });
    const fetched = await gateway.request('POST', '/ojs/v1/workers/fetch', { queues: ['default'] });
    expect(fetched.body.jobs[0].id).to.equal(pushed.body.job.id);
    const ran: unknown[] = [];
    await runTasks({ slow_task: async (payload) => void ran.push(payload) });
    expect(ran, 'the runner skipped the job the HTTP worker holds').to.deep.equal([]);
    expect((await gateway.request('POST', '/ojs/v1/workers/ack', { job_id: pushed.body.job.id })).body.state).to.equal('completed');
  });

  it('the same job enqueued with makeUniqueWorkerUtils and over HTTP is one job, in either order', async () => {
    const unique = { keys: ['type', 'args'] as ('type' | 'args')[], args_keys: ['order_id'] };
    const workerUtils = await utils();
    try {
      const first = await workerUtils.addJob('order_ship', { order_id: 1, note: 'host' }, { unique });
      const viaHttp = await gateway.request('POST', '/ojs/v1/jobs', {
        type: 'order_ship',
        args: [{ order_id: 1, note: 'http' }],
        options: { unique },
      });
      expect(viaHttp.status).to.equal(409);
      expect(viaHttp.body.error.details.existing_job_id).to.equal(first.job.id);
      const second = await gateway.request('POST', '/ojs/v1/jobs', {
        type: 'order_ship',
        args: argsArray({ order_id: 2 }),
        options: { unique },
      });
      expect(second.status).to.equal(201);
      const error = await workerUtils.addJob('order_ship', { order_id: 2 }, { unique }).then(
        () => null,
        (caught: unknown) => caught,
      );
      expect(isDuplicateJobError(error) && error.existingJobId).to.equal(second.body.job.id);
    } finally {
      await workerUtils.release();
    }
  });
});

/** OJS args whose payload is `payload` (the inverse of argsToPayload for an object). */
function argsArray(payload: Record<string, unknown>): unknown[] {
  const args = [payload];
  expect(argsToPayload(args as never)).to.deep.equal(payload);
  return args;
}
