/**
 * Migrating BullMQ producers and workers to OJS one service at a time, with the gateway:
 *
 *   npx tsx examples/gateway/bullmq.ts          # Redis from REDIS_URL (default redis://127.0.0.1:6379)
 *
 * 1. wrap: the existing producer adds through `withUniqueness(queue)`;
 * 2. open the gateway on the same Redis and prefix (`ojs-unique serve --backend bullmq`, here in-process);
 * 3. a service moved to OJS POSTs the same job: it is the same key, so it meets the producer's job;
 * 4. an HTTP worker fetches and acks the producer's job, while the existing BullMQ Worker runs a
 *    job POSTed over HTTP.
 *
 * Uses the key prefix `ojs-example:gateway` (`…:<OJS_EXAMPLE_SALT>` when set) and deletes it at the end.
 */
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { withUniqueness } from 'ojs-unique/bullmq';
import { createGatewayStore, createOjsServer } from 'ojs-unique/server';

const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = ['ojs-example:gateway', process.env.OJS_EXAMPLE_SALT].filter(Boolean).join(':');
const connection = new Redis(redisUrl, { maxRetriesPerRequest: null });
const unique = { keys: ['type', 'args'] as ('type' | 'args')[], args_keys: ['order_id'] };

// 2. The gateway (testReset only so that this example can clean up after itself).
const app = await createOjsServer({ store: await createGatewayStore({ backend: 'bullmq', redisUrl, prefix }), testReset: true });
const base = await app.listen({ host: '127.0.0.1', port: 0 });
const ojs = async (path: string, body: unknown) => {
  const reply = await fetch(base + path, {
    method: 'POST',
    headers: { 'content-type': 'application/openjobspec+json' },
    body: JSON.stringify(body),
  });
  return { status: reply.status, body: (await reply.json()) as any };
};

const invoices = new Queue('invoices', { connection, prefix });
try {
  // 1. The existing producer, wrapped.
  const hostJob = await withUniqueness(invoices).add('invoice.send', { order_id: 1 }, { unique });
  console.log(`producer (BullMQ): job ${hostJob.id} ${hostJob.unique.outcome}`);

  // 3. The same job from a service that speaks OJS: args [payload], the same policy.
  const dup = await ojs('/ojs/v1/jobs', { type: 'invoice.send', args: [{ order_id: 1 }], options: { queue: 'invoices', unique } });
  console.log(`service (HTTP): ${dup.status} ${dup.body.error.code}, existing job ${dup.body.error.details.existing_job_id}`);

  // 4a. An HTTP worker takes the producer's job, and acks it.
  const fetched = await ojs('/ojs/v1/workers/fetch', { queues: ['invoices'] });
  const acked = await ojs('/ojs/v1/workers/ack', { job_id: fetched.body.jobs[0].id, result: { sent: true } });
  console.log(`HTTP worker: ${fetched.body.jobs[0].id} ${acked.body.state}`);

  // 4b. A job POSTed over HTTP is run by the existing BullMQ Worker.
  const pushed = await ojs('/ojs/v1/jobs', { type: 'invoice.send', args: [{ order_id: 2 }], options: { queue: 'invoices', unique } });
  await new Promise<void>((resolve) => {
    const worker = new Worker('invoices', async (job) => console.log(`BullMQ worker: ${job.id} order ${job.data.order_id}`), {
      connection,
      prefix,
    });
    worker.on('completed', (job) => {
      if (job.id === pushed.body.job.id) void worker.close().then(resolve);
    });
  });
} finally {
  await invoices.close();
  await ojs('/ojs/v1/admin/reset', {});
  await app.close();
  await connection.quit();
}
