/** The demo on the in-memory backend: a clock the demo moves, and the backend's own fetch/ack/nack as the worker. */
import { createMemoryBackend } from 'ojs-unique/memory';
import type { DemoBackend } from './demo-backend.js';

export default async function createDemoBackend(): Promise<DemoBackend> {
  let now = Date.now();
  const backend = createMemoryBackend({ clock: { now: () => now } });
  return {
    backend,
    advanceClock: (ms) => void (now += ms),
    async run(id, failWith) {
      const job = await backend.getJob(id);
      const fetched = job && (await backend.fetch([job.queue]));
      if (fetched?.id !== id) throw new Error(`demo: expected to fetch job ${id}, fetched ${fetched?.id ?? 'nothing'}`);
      return failWith === undefined ? backend.ack(id) : backend.nack(id, { message: failWith });
    },
    async makeDue(id) {
      await backend.promote(id);
    },
    close: () => backend.close(),
  };
}
