/**
 * An ended workflow is kept `WORKFLOW_RETENTION_MS` after its last write and then gone, on every
 * store: Redis by the record's expiry, memory and Graphile Worker by reading it as absent and a
 * lazy sweep. Its job links go as soon as none of its jobs can still end. A running workflow is
 * never dropped.
 */
import { expect } from 'chai';
import { Redis } from 'ioredis';
import pg from 'pg';
import type { GatewayJob, GatewayStore } from '../../server/gateway-store.js';
import type { GraphileWorkflowRecords } from '../../server/graphile-worker-workflow-records.js';
import { settleWorkflowJob } from '../../server/workflow-advance.js';
import { newWorkflowRecord, WORKFLOW_RETENTION_MS } from '../../server/workflow-record.js';
import { uuidv7 } from '../../src/uuid-v7.js';
import { REDIS_URL } from '../adapters/bullmq-test-redis.js';
import { databaseUrl } from '../conformance/subjects/graphile-worker.js';
import { GATEWAY_BACKENDS, gatewayNames, makeStore } from './gateway-test-server.js';

for (const backend of GATEWAY_BACKENDS) {
  describe(`ended workflow retention: ${backend}`, function () {
    this.timeout(60_000);
    const names = gatewayNames('wf-retention');
    let now = Date.now();
    const clock = { now: () => now };
    let store: GatewayStore;
    before(() => {
      store = makeStore(backend, names, clock);
    });
    after(() => store.close());
    beforeEach(async () => {
      now = Date.now();
      await store.reset();
    });

    /** A group of two jobs, its record stored. */
    const group = async () => {
      const input = (type: string) => ({ id: uuidv7(), type, args: [], queue: 'wf-retention', extras: { envelope: {} } });
      const record = newWorkflowRecord(uuidv7(), 'group', null, [input('wf.a'), input('wf.b')], {}, new Date());
      await store.workflows.create(record);
      return record;
    };
    const ended = (id: string) => ({ id, state: 'completed', result: null }) as unknown as GatewayJob;

    /** Moves the workflow past its retention: the memory clock, or the stored expiry (Redis, PostgreSQL). */
    const expire = async (id: string) => {
      if (backend === 'memory') now += WORKFLOW_RETENTION_MS + 1;
      else if (backend === 'bullmq') await withRedis((redis) => redis.pexpire(`${names.prefix}:ojs-gateway:workflow:${id}`, 1));
      else
        await withPg((client) => client.query(`update "${names.uniqueSchema}".gateway_workflows set expires_at = now() - interval '1 ms'`));
      if (backend === 'bullmq') await new Promise((resolve) => setTimeout(resolve, 20));
    };

    it('a running workflow is kept; an ended one is readable until its retention passes, then gone', async () => {
      const record = await group();
      await settleWorkflowJob(store, ended(record.jobs[0]!.job_id));
      expect((await store.workflows.read(record.id))!.record.state).to.equal('running');
      if (backend === 'bullmq')
        expect(await withRedis((redis) => redis.pttl(`${names.prefix}:ojs-gateway:workflow:${record.id}`))).to.equal(-1);
      if (backend === 'memory') now += WORKFLOW_RETENTION_MS + 1;
      expect(await store.workflows.read(record.id)).to.not.equal(null);

      await settleWorkflowJob(store, ended(record.jobs[1]!.job_id));
      expect((await store.workflows.read(record.id))!.record.state).to.equal('completed');
      // Settled: nothing of it can end again, so its jobs no longer lead to it.
      expect(await store.workflows.ofJob(record.jobs[1]!.job_id)).to.equal(null);
      if (backend === 'bullmq') {
        const ttl = await withRedis((redis) => redis.pttl(`${names.prefix}:ojs-gateway:workflow:${record.id}`));
        expect(ttl).to.be.within(WORKFLOW_RETENTION_MS - 60_000, WORKFLOW_RETENTION_MS);
      }
      if (backend === 'memory') now += WORKFLOW_RETENTION_MS - 1;
      expect(await store.workflows.read(record.id)).to.not.equal(null);

      await expire(record.id);
      expect(await store.workflows.read(record.id)).to.equal(null);
      if (backend === 'graphile-worker') {
        expect(await (store.workflows as GraphileWorkflowRecords).sweep()).to.equal(1);
        const rows = await withPg((client) =>
          client.query(
            `select (select count(*) from "${names.uniqueSchema}".gateway_workflows)::int as workflows,
                    (select count(*) from "${names.uniqueSchema}".gateway_workflow_jobs)::int as links`,
          ),
        );
        expect(rows.rows[0]).to.deep.equal({ workflows: 0, links: 0 });
      }
    });

    it('a write to an expired workflow writes nothing', async () => {
      const record = await group();
      await settleWorkflowJob(store, ended(record.jobs[0]!.job_id));
      await settleWorkflowJob(store, ended(record.jobs[1]!.job_id));
      const { version } = (await store.workflows.read(record.id))!;
      await expire(record.id);
      expect(await store.workflows.write(record, version)).to.equal(false);
      expect(await store.workflows.read(record.id)).to.equal(null);
    });
  });
}

async function withRedis<T>(use: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = new Redis(REDIS_URL);
  try {
    return await use(redis);
  } finally {
    await redis.quit();
  }
}

async function withPg<T>(use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: databaseUrl() });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}
