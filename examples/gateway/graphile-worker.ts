/**
 * Migrating Graphile Worker producers and task runners to OJS one service at a time, with the gateway:
 *
 *   npx tsx examples/gateway/graphile-worker.ts   # DATABASE_URL (default postgres://127.0.0.1:5432/test)
 *
 * 1. wrap: the existing producer adds through `makeUniqueWorkerUtils`;
 * 2. open the gateway on the same database and schemas (`ojs-unique serve --backend graphile-worker`, here in-process);
 * 3. a service moved to OJS POSTs the same job: it is the same key, so it meets the producer's job;
 * 4. an HTTP worker fetches and acks the producer's job, while the existing task runner runs a job
 *    POSTed over HTTP.
 *
 * Uses the example schemas of examples/graphile-worker/, reset first.
 */
import { runOnce } from 'graphile-worker';
import { makeUniqueWorkerUtils } from 'ojs-unique/graphile-worker';
import { createGatewayStore, createOjsServer } from 'ojs-unique/server';
import { GRAPHILE_SCHEMA, UNIQUE_SCHEMA, databaseUrl, examplePool, resetExampleSchemas } from '../graphile-worker/example-connection.js';

const pool = examplePool();
await resetExampleSchemas(pool);
const unique = { keys: ['type', 'args'] as ('type' | 'args')[], args_keys: ['order_id'] };

// 2. The gateway.
const store = await createGatewayStore({
  backend: 'graphile-worker',
  databaseUrl: databaseUrl(),
  prefix: GRAPHILE_SCHEMA,
  uniqueSchema: UNIQUE_SCHEMA,
});
const app = await createOjsServer({ store });
const base = await app.listen({ host: '127.0.0.1', port: 0 });
const ojs = async (path: string, body: unknown) => {
  const reply = await fetch(base + path, {
    method: 'POST',
    headers: { 'content-type': 'application/openjobspec+json' },
    body: JSON.stringify(body),
  });
  return { status: reply.status, body: (await reply.json()) as any };
};

const utils = await makeUniqueWorkerUtils({ pgPool: pool, schema: GRAPHILE_SCHEMA, uniqueSchema: UNIQUE_SCHEMA });
try {
  // 1. The existing producer, wrapped.
  const hostJob = await utils.addJob('invoice_send', { order_id: 1 }, { unique });
  console.log(`producer (Graphile): job ${hostJob.job.id} ${hostJob.outcome}`);

  // 3. The same job from a service that speaks OJS: args [payload], the same policy.
  const dup = await ojs('/ojs/v1/jobs', { type: 'invoice_send', args: [{ order_id: 1 }], options: { unique } });
  console.log(`service (HTTP): ${dup.status} ${dup.body.error.code}, existing job ${dup.body.error.details.existing_job_id}`);

  // 4a. An HTTP worker takes the producer's job (Graphile's own lock: no runner can take it now), and acks it.
  const fetched = await ojs('/ojs/v1/workers/fetch', { queues: ['default'] });
  const acked = await ojs('/ojs/v1/workers/ack', { job_id: fetched.body.jobs[0].id, result: { sent: true } });
  console.log(`HTTP worker: ${fetched.body.jobs[0].id} ${acked.body.state}`);

  // 4b. A job POSTed over HTTP is run by the existing task runner.
  await ojs('/ojs/v1/jobs', { type: 'invoice_send', args: [{ order_id: 2 }], options: { unique } });
  await runOnce({
    pgPool: pool,
    schema: GRAPHILE_SCHEMA,
    taskList: { invoice_send: async (payload) => console.log(`Graphile task: order ${(payload as { order_id: number }).order_id}`) },
  });
} finally {
  await utils.release();
  await app.close();
  await pool.end();
}
