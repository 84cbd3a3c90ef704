/**
 * The demo on BullMQ: Redis from REDIS_URL (default redis://127.0.0.1:6379), a key prefix of
 * its own (`ojs-demo:<uuid>`), deleted at the end. A job runs on a BullMQ `Worker` processing
 * manually (`getNextJob`, then `moveToCompleted` or `moveToFailed`), so completion and retries
 * are BullMQ's own; `makeDue` is `job.promote()`.
 */
import { randomUUID } from 'node:crypto';
import { Job, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { createBullMQBackend } from 'ojs-unique/bullmq';
import type { OjsJob } from 'ojs-unique';
import type { DemoBackend } from './demo-backend.js';

export default async function createDemoBackend(): Promise<DemoBackend> {
  const connection = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null });
  const prefix = `ojs-demo:${randomUUID()}`;
  const backend = createBullMQBackend({ connection, prefix });

  const jobOf = async (id: string): Promise<OjsJob> => {
    const job = await backend.getJob(id);
    if (!job) throw new Error(`demo: no job ${id}`);
    return job;
  };

  return {
    backend,
    advanceClock: null,
    async run(id, failWith) {
      const { queue } = await jobOf(id);
      const worker = new Worker(queue, null, { connection, prefix, autorun: false });
      try {
        const token = randomUUID();
        const job = await worker.getNextJob(token, { block: false });
        if (job?.id !== id) throw new Error(`demo: expected the worker to take job ${id}, it took ${job?.id ?? 'nothing'}`);
        if (failWith === undefined) await job.moveToCompleted('done', token, false);
        else await job.moveToFailed(new Error(failWith), token, false);
      } finally {
        await worker.close();
      }
      return jobOf(id);
    },
    async makeDue(id) {
      const { queue } = await jobOf(id);
      const job = await Job.fromId(backend.queue(queue), id);
      if (!job) throw new Error(`demo: no BullMQ job ${id}`);
      await job.promote();
    },
    async close() {
      await backend.close();
      let cursor = '0';
      do {
        const [next, keys] = await connection.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
        cursor = next;
        if (keys.length > 0) await connection.del(...keys);
      } while (cursor !== '0');
      await connection.quit();
    },
  };
}
