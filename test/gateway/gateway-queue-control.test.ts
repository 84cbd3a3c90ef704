/**
 * What the conformance suite leaves unchecked of queue pause/resume, rate limits, relative times
 * and `expires_at`: other queues keep being served, the limit is kept across gateway processes
 * over one backend, BullMQ's own queue is paused, an expired job is passed over (not a reason for
 * an empty fetch), and bad values are refused naming their field. Hour-long rate windows: no
 * assertion depends on timing.
 */
import { expect } from 'chai';
import { Queue } from 'bullmq';
import { REDIS_URL } from '../adapters/bullmq-test-redis.js';
import { GATEWAY_BACKENDS, startGateway, type TestGateway } from './gateway-test-server.js';

for (const backend of GATEWAY_BACKENDS) {
  describe(`gateway queue control: ${backend}`, function () {
    this.timeout(20_000);
    let gateway: TestGateway;
    before(async () => {
      gateway = await startGateway(backend, 'queuectl');
    });
    after(() => gateway?.close());
    beforeEach(() => gateway.reset());
    const push = async (queue: string, options: Record<string, unknown> = {}) => {
      const reply = await gateway.request('POST', '/ojs/v1/jobs', { type: 'ctl.job', args: [], options: { queue, ...options } });
      expect(reply.status, JSON.stringify(reply.body)).to.equal(201);
      return reply.body.job as { id: string; state: string; scheduled_at: string; expires_at?: string };
    };
    const fetchIds = async (queues: string[], count = 10) =>
      (await gateway.request('POST', '/ojs/v1/workers/fetch', { queues, count })).body.jobs.map((job: { id: string }) => job.id);

    it('a paused queue is passed over while the other queues of the fetch are served; its jobs stay available', async () => {
      const paused = await push('ctl-paused');
      const open = await push('ctl-open');
      const reply = await gateway.request('POST', '/ojs/v1/queues/ctl-paused/pause', {});
      expect(reply.body).to.include({ status: 'paused' });
      expect(reply.body.paused_at).to.be.a('string');
      expect(await fetchIds(['ctl-paused', 'ctl-open'])).to.deep.equal([open.id]);
      expect((await gateway.request('GET', `/ojs/v1/jobs/${paused.id}`)).body.job.state).to.equal('available');
      expect((await gateway.request('GET', '/ojs/v1/queues/ctl-paused/stats')).body).to.include({ paused: true, available: 1 });
      // Pausing twice is pausing once; resuming hands the job out.
      expect((await gateway.request('POST', '/ojs/v1/queues/ctl-paused/pause')).status).to.equal(200);
      const resumed = await gateway.request('POST', '/ojs/v1/queues/ctl-paused/resume', {});
      expect(resumed.body).to.deep.include({ queue: { name: 'ctl-paused', paused: false, status: 'active' }, status: 'active' });
      expect((await gateway.request('GET', '/ojs/v1/queues/ctl-paused/stats')).body.paused).to.equal(false);
      expect(await fetchIds(['ctl-paused'])).to.deep.equal([paused.id]);
    });

    it('a bad queue name in the pause route is refused naming it', async () => {
      const reply = await gateway.request('POST', '/ojs/v1/queues/Bad_Queue/pause', {});
      expect(reply.status).to.equal(400);
      expect(reply.body.error.details.field).to.equal('name');
    });

    it('a rate limit holds a fetch of many to the limit, and limits only its queue', async () => {
      for (let i = 0; i < 4; i++) await push('ctl-limited', { rate_limit: { max_per_hour: 2 } });
      const free = [await push('ctl-free'), await push('ctl-free')];
      expect(await fetchIds(['ctl-limited'])).to.have.length(2);
      expect(await fetchIds(['ctl-limited'])).to.deep.equal([]);
      expect(await fetchIds(['ctl-limited', 'ctl-free'])).to.deep.equal(free.map((job) => job.id));
    });

    it('an expired job is discarded at fetch, with no completion, and the fetch goes on to the next job', async () => {
      const expired = await push('ctl-ttl', { expires_at: '2020-01-01T00:00:00Z' });
      const live = await push('ctl-ttl', { expires_at: '+PT1H' });
      expect(await fetchIds(['ctl-ttl'])).to.deep.equal([live.id]);
      const job = (await gateway.request('GET', `/ojs/v1/jobs/${expired.id}`)).body.job;
      expect(job).to.include({ state: 'discarded' });
      expect(job.discarded_at).to.be.a('string');
      expect(job).to.not.have.property('completed_at');
      expect(job.error).to.include({ type: 'expired' });
    });

    it('relative times are resolved to date-times at PUSH', async () => {
      const job = await push('ctl-rel', { scheduled_at: '+PT1H', expires_at: '+P1DT2H' });
      expect(job.state).to.equal('scheduled');
      const ahead = Date.parse(job.scheduled_at) - Date.now();
      expect(ahead).to.be.above(3_000_000).and.at.most(3_600_000);
      expect(Date.parse(job.expires_at!) - Date.parse(job.scheduled_at))
        .to.be.above(80_000_000)
        .and.below(95_000_000);
      expect(await fetchIds(['ctl-rel'])).to.deep.equal([]);
    });

    for (const [options, field] of [
      [{ scheduled_at: '+PT' }, 'options.scheduled_at'],
      [{ scheduled_at: 'PT5S' }, 'options.scheduled_at'],
      [{ expires_at: 'tomorrow' }, 'options.expires_at'],
      [{ rate_limit: { max_per_second: 0 } }, 'options.rate_limit.max_per_second'],
      [{ rate_limit: { max_per_second: 1, max_per_minute: 5 } }, 'options.rate_limit'],
      [{ rate_limit: { per_day: 5 } }, 'options.rate_limit.per_day'],
    ] as const) {
      it(`refuses ${JSON.stringify(options)} naming ${field}, writing nothing`, async () => {
        const reply = await gateway.request('POST', '/ojs/v1/jobs', {
          type: 'ctl.job',
          args: [],
          options: { queue: 'ctl-bad', ...options },
        });
        expect(reply.status).to.equal(400);
        expect(reply.body.error.details.field).to.equal(field);
        expect((await gateway.request('GET', '/ojs/v1/queues/ctl-bad/stats')).body.available).to.equal(0);
      });
    }
  });
}

for (const backend of ['bullmq', 'graphile-worker'] as const) {
  describe(`gateway queue control over one backend, two processes: ${backend}`, function () {
    this.timeout(20_000);
    let first: TestGateway;
    let second: TestGateway;
    before(async () => {
      first = await startGateway(backend, 'queuectl2');
      second = await startGateway(backend, 'queuectl2');
    });
    after(async () => {
      await first?.close();
      await second?.close();
    });
    beforeEach(() => first.reset());
    const fetchIds = async (gateway: TestGateway, queue: string) =>
      (await gateway.request('POST', '/ojs/v1/workers/fetch', { queues: [queue], count: 10 })).body.jobs.map(
        (job: { id: string }) => job.id,
      );

    it("one process's pause and rate limit hold for the other", async () => {
      for (let i = 0; i < 3; i++) {
        const reply = await first.request('POST', '/ojs/v1/jobs', {
          type: 'ctl.job',
          args: [i],
          options: { queue: 'ctl-shared', rate_limit: { max_per_hour: 2 } },
        });
        expect(reply.status).to.equal(201);
      }
      await first.request('POST', '/ojs/v1/queues/ctl-shared/pause', {});
      expect(await fetchIds(second, 'ctl-shared')).to.deep.equal([]);
      expect((await second.request('GET', '/ojs/v1/queues/ctl-shared/stats')).body.paused).to.equal(true);
      await second.request('POST', '/ojs/v1/queues/ctl-shared/resume', {});
      expect(await fetchIds(first, 'ctl-shared')).to.have.length(2);
      expect(await fetchIds(second, 'ctl-shared')).to.deep.equal([]);
    });
  });
}

describe('gateway queue control: BullMQ maps onto its own queue', function () {
  this.timeout(20_000);
  let gateway: TestGateway;
  let queue: Queue;
  before(async () => {
    gateway = await startGateway('bullmq', 'queuectl3');
    queue = new Queue('ctl-native', { connection: { url: REDIS_URL }, prefix: gateway.names.prefix });
  });
  after(async () => {
    await queue?.close();
    await gateway?.close();
  });
  beforeEach(() => gateway.reset());

  it("pause and resume are BullMQ's own (its workers stop too), the rate limit BullMQ's global one", async () => {
    await gateway.request('POST', '/ojs/v1/queues/ctl-native/pause', {});
    expect(await queue.isPaused()).to.equal(true);
    await gateway.request('POST', '/ojs/v1/queues/ctl-native/resume', {});
    expect(await queue.isPaused()).to.equal(false);
    await gateway.request('POST', '/ojs/v1/jobs', {
      type: 'ctl.job',
      args: [],
      options: { queue: 'ctl-native', rate_limit: { max_per_minute: 7 } },
    });
    expect(await queue.getGlobalRateLimit()).to.deep.equal({ max: 7, duration: 60_000 });
  });
});
