/**
 * A BullMQ Worker processing unique jobs, and what uniqueness means across a job's life:
 * a policy whose `states` include "completed" keeps blocking after the job ran, for its period.
 *
 *   npx tsx examples/bullmq/worker.ts            # Redis from REDIS_URL (default redis://127.0.0.1:6379)
 *
 * Uses the key prefix `ojs-example:worker` (`ojs-example:worker:<OJS_EXAMPLE_SALT>` when that is set, as the
 * tests do so that two runs on one Redis never share keys) and deletes it at the end.
 */
import { Queue, QueueEvents, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { removeUniquenessIndex, withUniqueness } from 'ojs-unique/bullmq';
import type { UniquePolicyInput } from 'ojs-unique';

const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const connection = new Redis(url, { maxRetriesPerRequest: null });
const prefix = ['ojs-example:worker', process.env.OJS_EXAMPLE_SALT].filter(Boolean).join(':');
const invoices = new Queue('invoices', { connection, prefix });
const queue = withUniqueness(invoices);

// Deduplicated and replaced adds are visible to QueueEvents, under BullMQ's own event names.
const eventsConnection = new Redis(url, { maxRetriesPerRequest: null });
const events = new QueueEvents('invoices', { connection: eventsConnection, prefix });
events.on('deduplicated', ({ jobId, deduplicatedJobId }) =>
  console.log(`event deduplicated: kept ${jobId}, dropped ${deduplicatedJobId || '(counter id)'}`),
);
await events.waitUntilReady();

const processed = new Promise<void>((resolve) => {
  const worker = new Worker(
    'invoices',
    async (job) => {
      console.log(`worker: generating invoice for order ${job.data.order_id}`);
      return 'ok';
    },
    { connection, prefix },
  );
  worker.on('completed', (job) => {
    console.log(`worker: job ${job.id} completed`);
    void worker.close().then(resolve);
  });
});

// §10.5: one invoice per order per day, even after the job completed. BullMQ must keep the
// completed job for that long, so removeOnComplete keeps it a day (a shorter keep is refused).
const unique = {
  keys: ['type', 'args'],
  args_keys: ['order_id'],
  states: ['available', 'active', 'scheduled', 'retryable', 'pending', 'completed'],
  period: 'P1D',
  on_conflict: 'ignore',
} satisfies UniquePolicyInput;
const job = await queue.add('invoice.generate', { order_id: 'o-1' }, { unique, removeOnComplete: { age: 86_400 } });
console.log(`added ${job.id}: ${job.unique?.outcome}`);
await processed;

const later = await queue.add('invoice.generate', { order_id: 'o-1' }, { unique, removeOnComplete: { age: 86_400 } });
console.log(
  `added again after completion: ${later.unique?.outcome}, existing job ${later.unique?.existingJobId} is ${later.unique?.existingJobState}`,
);

try {
  await queue.add('invoice.generate', { order_id: 'o-2' }, { unique, removeOnComplete: true });
} catch (error) {
  console.log(`removeOnComplete: true is refused for this policy: ${(error as Error).message}`);
}

await new Promise((resolve) => setTimeout(resolve, 200));
await events.close();
await eventsConnection.quit();
await invoices.obliterate({ force: true });
await removeUniquenessIndex(invoices, { global: true });
await invoices.close();
await connection.quit();
