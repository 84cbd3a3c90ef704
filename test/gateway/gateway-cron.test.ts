/**
 * Cron beyond what the conformance files check: each tick fires in one process when two gateway
 * stores run over one Redis or one database (a tick handed to both would be a double fire), an
 * unregistered cron fires no more, a cron's job carries its name and tick and reaches an HTTP
 * worker, a registration is an upsert, and bad registrations are refused naming the field. The
 * crons here tick every second (6 fields, seconds first); the tests wait for a number of ticks,
 * never assert how long anything took.
 */
import { expect } from 'chai';
import type { CronDefinition } from '../../server/cron-schedules.js';
import { loadCronParser, nextOccurrence, occursAt } from '../../server/cron-expression.js';
import { cronJobId } from '../../server/cron-firing.js';
import type { GatewayStore } from '../../server/gateway-store.js';
import { GATEWAY_BACKENDS, gatewayNames, makeStore, startGateway, type TestGateway } from './gateway-test-server.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `done()` holds, looking every 200 ms, at most `ms`. */
async function until(done: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}`);
    await sleep(200);
  }
}

const everySecond = (name: string): CronDefinition => ({
  name,
  expression: '* * * * * *',
  timezone: 'UTC',
  overlap_policy: 'allow',
  enabled: true,
  description: null,
  template: { type: 'cron.tick', args: [], options: { queue: 'cron-test' } },
});

// An optional peer, loaded by the server at start; these tests call the parsing functions directly.
before(() => loadCronParser());

describe('cron expressions (ojs-cron §3–§5)', () => {
  it('a wall time the spring-forward skips does not fire; the day after fires as usual', () => {
    const from = Date.parse('2026-03-07T12:00:00Z');
    // 02:30 America/New_York does not exist on 2026-03-08 (02:00 -> 03:00).
    expect(new Date(nextOccurrence('30 2 * * *', 'America/New_York', from)!).toISOString()).to.equal('2026-03-09T06:30:00.000Z');
    expect(occursAt('30 2 * * *', 'America/New_York', Date.parse('2026-03-08T07:30:00Z'))).to.equal(false);
  });

  it('a wall time the fall-back repeats fires once, the first time', () => {
    // 01:30 America/New_York happens twice on 2026-11-01: 05:30Z (EDT), then 06:30Z (EST).
    expect(occursAt('30 1 * * *', 'America/New_York', Date.parse('2026-11-01T05:30:00Z'))).to.equal(true);
    expect(occursAt('30 1 * * *', 'America/New_York', Date.parse('2026-11-01T06:30:00Z'))).to.equal(false);
    expect(occursAt('*/30 * * * *', 'America/New_York', Date.parse('2026-11-01T06:00:00Z'))).to.equal(false);
    expect(occursAt('*/30 * * * *', 'America/New_York', Date.parse('2026-11-01T07:00:00Z'))).to.equal(true);
  });

  it('@daily is midnight in the cron’s time zone', () => {
    const from = Date.parse('2026-03-07T12:00:00Z');
    expect(new Date(nextOccurrence('@daily', 'Asia/Tokyo', from)!).toISOString()).to.equal('2026-03-07T15:00:00.000Z');
    expect(new Date(nextOccurrence('@midnight', 'UTC', from)!).toISOString()).to.equal('2026-03-08T00:00:00.000Z');
  });

  it('a tick’s job id is a UUIDv7 of the tick, the same for the same cron and tick only', () => {
    const tick = Date.parse('2026-03-07T12:00:00Z');
    expect(cronJobId('a', tick)).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(cronJobId('a', tick)).to.equal(cronJobId('a', tick));
    expect(cronJobId('a', tick)).to.not.equal(cronJobId('b', tick));
    expect(cronJobId('a', tick)).to.not.equal(cronJobId('a', tick + 1000));
  });
});

for (const backend of GATEWAY_BACKENDS) {
  describe(`gateway cron: ${backend}`, function () {
    this.timeout(60_000);
    let gateway: TestGateway;
    before(async () => {
      gateway = await startGateway(backend, 'cron');
    });
    after(() => gateway?.close());
    beforeEach(() => gateway.reset());

    it("a cron's job reaches an HTTP worker with the cron's name and tick in meta, reserved for the cron's visibility timeout", async () => {
      const registered = await gateway.request('POST', '/ojs/v1/cron', {
        name: 'cron-http',
        cron: '* * * * * *',
        type: 'cron.http',
        args: [{ n: 1 }],
        options: { queue: 'cron-http' },
        overlap_policy: 'allow',
      });
      expect(registered.status, JSON.stringify(registered.body)).to.equal(201);
      expect(registered.body.cron_job).to.include({ name: 'cron-http', cron: '* * * * * *', type: 'cron.http', status: 'active' });
      let jobs: { id: string; meta: Record<string, string>; args: unknown[] }[] = [];
      await until(
        async () => (jobs = (await gateway.request('POST', '/ojs/v1/workers/fetch', { queues: ['cron-http'] })).body.jobs).length > 0,
        15_000,
        'a tick',
      );
      const [job] = jobs;
      expect(job!.args).to.deep.equal([{ n: 1 }]);
      expect(job!.meta.cron_name).to.equal('cron-http');
      expect(job!.id).to.equal(cronJobId('cron-http', Date.parse(job!.meta.cron_triggered_at!)));
      expect((await gateway.request('DELETE', '/ojs/v1/cron/cron-http')).status).to.equal(200);
      const events = (await gateway.request('GET', '/ojs/v1/events?types=cron.triggered')).body.events;
      expect(events.map((event: { data: { job_id: string } }) => event.data.job_id)).to.include(job!.id);
    });

    it('registering a name again replaces its cron (200), keeping its creation time', async () => {
      const first = await gateway.request('POST', '/ojs/v1/cron', { name: 'cron-upsert', cron: '0 0 * * *', type: 'cron.a', args: [] });
      expect(first.status).to.equal(201);
      const again = await gateway.request('POST', '/ojs/v1/cron', {
        name: 'cron-upsert',
        expression: '0 12 * * *',
        timezone: 'Asia/Tokyo',
        job_template: { type: 'cron.b', args: [] },
      });
      expect(again.status).to.equal(200);
      expect(again.body.cron).to.include({ expression: '0 12 * * *', timezone: 'Asia/Tokyo', type: 'cron.b' });
      expect(again.body.cron.created_at).to.equal(first.body.cron.created_at);
      expect(new Date(again.body.cron.next_run_at).getUTCHours()).to.equal(3);
      const list = (await gateway.request('GET', '/ojs/v1/cron')).body;
      expect(list.cron_jobs.map((cron: { name: string }) => cron.name)).to.deep.equal(['cron-upsert']);
      expect((await gateway.request('GET', '/ojs/v1/cron/cron-upsert')).body.cron.type).to.equal('cron.b');
    });

    it('a disabled cron is listed with no next run and does not fire', async () => {
      const reply = await gateway.request('POST', '/ojs/v1/cron', {
        name: 'cron-off',
        cron: '* * * * * *',
        type: 'cron.off',
        args: [],
        options: { queue: 'cron-off' },
        enabled: false,
      });
      expect(reply.body.cron).to.include({ enabled: false, next_run_at: null, status: 'paused' });
      await sleep(2500);
      expect((await gateway.request('GET', '/ojs/v1/queues/cron-off/stats')).body.available).to.equal(0);
    });

    it('bad registrations are refused naming the field; an unknown cron is 404', async () => {
      const cases: [Record<string, unknown>, string][] = [
        [{ name: 'Bad_Name', cron: '* * * * *', type: 'a.b', args: [] }, 'name'],
        [{ name: 'ok', cron: '61 * * * *', type: 'a.b', args: [] }, 'cron'],
        [{ name: 'ok', expression: '* * * *', job_template: { type: 'a.b', args: [] } }, 'expression'],
        [{ name: 'ok', cron: '@every 5m', type: 'a.b', args: [] }, 'cron'],
        [{ name: 'ok', cron: '* * * * *', timezone: '+05:00', type: 'a.b', args: [] }, 'timezone'],
        [{ name: 'ok', cron: '* * * * *', timezone: 'EST', type: 'a.b', args: [] }, 'timezone'],
        [{ name: 'ok', cron: '* * * * *', overlap_policy: 'queue', type: 'a.b', args: [] }, 'overlap_policy'],
        [{ name: 'ok', expression: '* * * * *', job_template: { type: 'Bad Type', args: [] } }, 'job_template.type'],
        [{ name: 'ok', cron: '* * * * *', type: 'a.b', args: [], options: { queue: 'Bad Queue' } }, 'options.queue'],
      ];
      for (const [body, field] of cases) {
        const reply = await gateway.request('POST', '/ojs/v1/cron', body);
        expect(reply.status, JSON.stringify(body)).to.equal(400);
        expect(reply.body.error.code).to.equal('invalid_request');
        expect(reply.body.error.details.field, JSON.stringify(body)).to.equal(field);
      }
      expect((await gateway.request('GET', '/ojs/v1/cron')).body.crons).to.deep.equal([]);
      const missing = await gateway.request('DELETE', '/ojs/v1/cron/no-such-cron');
      expect(missing.status).to.equal(404);
      expect(missing.body.error).to.include({ code: 'not_found' });
    });

    it('an unregistered cron fires no more', async () => {
      const fired: number[] = [];
      const store = makeStore(backend, gatewayNames('cron-stop'));
      try {
        await store.reset();
        store.cron.start(async (_record, tick) => {
          fired.push(tick);
          return `job-${tick}`;
        });
        await store.cron.register(everySecond('cron-stop'));
        await until(() => fired.length >= 2, 20_000, 'two ticks');
        expect(await store.cron.remove('cron-stop')).to.include({ name: 'cron-stop' });
        // A tick taken just before the removal may still finish firing.
        await sleep(1500);
        const after = fired.length;
        await sleep(3000);
        expect(fired.length).to.equal(after);
        expect(await store.cron.get('cron-stop')).to.equal(null);
      } finally {
        await store.reset().catch(() => undefined);
        await store.close();
      }
    });
  });
}

for (const backend of ['bullmq', 'graphile-worker'] as const) {
  describe(`gateway cron, two processes over one backend: ${backend}`, function () {
    this.timeout(60_000);

    it('each tick fires in one of the two processes, never both; both list the cron', async () => {
      const names = gatewayNames('cron-pair');
      const stores: GatewayStore[] = [makeStore(backend, names), makeStore(backend, names)];
      const fired: { by: number; tick: number }[] = [];
      try {
        await stores[0]!.reset();
        stores.forEach((store, by) =>
          store.cron.start(async (_record, tick) => {
            fired.push({ by, tick });
            return `job-${tick}`;
          }),
        );
        await stores[0]!.cron.register(everySecond('cron-pair'));
        await until(() => fired.length >= 6, 30_000, 'six ticks');
        expect((await stores[1]!.cron.list()).map((cron) => cron.name)).to.deep.equal(['cron-pair']);
        await stores[1]!.cron.remove('cron-pair');
        await sleep(1500);
        const ticks = fired.map((fire) => fire.tick);
        expect(new Set(ticks).size, JSON.stringify(fired)).to.equal(ticks.length);
        for (const tick of ticks) expect(tick % 1000).to.equal(0);
      } finally {
        await stores[0]!.reset().catch(() => undefined);
        await Promise.all(stores.map((store) => store.close()));
      }
    });

    it('through two servers, every tick pushes one job, triggered by one of them', async () => {
      const gateways = [await startGateway(backend, 'cron-pair-http'), await startGateway(backend, 'cron-pair-http')];
      try {
        await gateways[0]!.reset();
        const registered = await gateways[0]!.request('POST', '/ojs/v1/cron', {
          name: 'cron-pair-http',
          expression: '* * * * * *',
          overlap_policy: 'allow',
          job_template: { type: 'cron.pair', args: [], options: { queue: 'cron-pair' } },
        });
        expect(registered.status).to.equal(201);
        const count = async () => (await gateways[1]!.request('GET', '/ojs/v1/queues/cron-pair/stats')).body.available as number;
        await until(async () => (await count()) >= 4, 30_000, 'four jobs');
        await gateways[1]!.request('DELETE', '/ojs/v1/cron/cron-pair-http');
        await sleep(1500);
        const jobs = (await gateways[0]!.request('POST', '/ojs/v1/workers/fetch', { queues: ['cron-pair'], count: 100 })).body.jobs as {
          id: string;
          meta: { cron_triggered_at: string };
        }[];
        const ticks = jobs.map((job) => job.meta.cron_triggered_at);
        expect(new Set(ticks).size).to.equal(jobs.length);
        const triggered = await Promise.all(
          gateways.map(
            async (gateway) => (await gateway.request('GET', '/ojs/v1/events?types=cron.triggered')).body.events.length as number,
          ),
        );
        // Each job was pushed by one process: the processes' triggered events add up to the jobs.
        expect(triggered[0]! + triggered[1]!).to.equal(jobs.length);
      } finally {
        await gateways[0]!.reset().catch(() => undefined);
        await Promise.all(gateways.map((gateway) => gateway.close()));
      }
    });
  });
}
