/**
 * The memory backend as a conformance subject: a virtual clock, and a "worker" that is the
 * backend's own fetch/ack/nack.
 */
import { type OjsJob } from '../../../src/index.js';
import { createMemoryBackend } from '../../../adapters/memory/index.js';
import type { ConformanceSubject, VirtualClock } from '../conformance-subject.js';

/** `countDuplicates`: the backend's option; on unless false (the suite's §5 duplicate counts need it). */
export default async function createSubject(options: { countDuplicates?: boolean } = {}): Promise<ConformanceSubject> {
  let now = Date.now();
  const clock: VirtualClock = {
    now: () => now,
    set: (ms) => void (now = ms),
    advance: (ms) => void (now += ms),
  };
  const backend = createMemoryBackend({ clock, countDuplicates: options.countDuplicates ?? true });
  return {
    backend,
    clock,
    async start(id) {
      const job = await backend.getJob(id);
      if (!job) throw new Error(`no job ${id}`);
      const fetched = await backend.fetch([job.queue]);
      if (fetched?.id !== id) throw new Error(`expected to fetch ${id}, fetched ${fetched?.id ?? 'nothing'}`);
      return {
        complete: (): Promise<OjsJob> => backend.ack(id),
        fail: (message = 'failed'): Promise<OjsJob> => backend.nack(id, { message }),
      };
    },
    async makeDue(id) {
      await backend.promote(id);
    },
    close: () => backend.close(),
  };
}
