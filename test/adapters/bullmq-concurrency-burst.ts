/**
 * One burst of the BullMQ concurrency test: `count` unique adds of one fingerprint, spread over
 * `queues` (each on its own Redis connection), all in flight at once. Every caller's outcome is
 * reported so the test can check it against the single live job.
 */
import type { UniqueQueue } from '../../adapters/bullmq/index.js';
import type { ConflictStrategy } from '../../src/index.js';

export interface BurstOutcome {
  outcome: 'created' | 'deduplicated' | 'replaced' | 'rejected' | 'error';
  id?: string;
  existingJobId?: string;
  replacedJobIds?: string[];
  error?: string;
}

export async function burst(queues: UniqueQueue[], strategy: string, round: number, count: number): Promise<BurstOutcome[]> {
  const unique = { keys: ['type', 'args'], args_keys: ['user_id'], on_conflict: strategy as ConflictStrategy } as const;
  const adds = Array.from({ length: count }, async (_, i): Promise<BurstOutcome> => {
    try {
      const job = await queues[i % queues.length]!.add(`race-${strategy}-${round}`, { user_id: round, n: i }, { unique });
      return { outcome: job.unique!.outcome, id: job.id!, existingJobId: job.unique!.existingJobId, replacedJobIds: job.unique!.replacedJobIds };
    } catch (error) {
      const e = error as { code?: string; existingJobId?: string; message: string };
      return e.code === 'duplicate' ? { outcome: 'rejected', existingJobId: e.existingJobId } : { outcome: 'error', error: e.message };
    }
  });
  return Promise.all(adds);
}
