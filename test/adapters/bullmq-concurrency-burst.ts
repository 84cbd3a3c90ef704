/**
 * One burst of the BullMQ concurrency test: `count` unique adds of one fingerprint, spread over
 * `queues` (each on its own Redis connection), all in flight at once. Every caller's outcome is
 * reported so the test can check it against the single live job.
 */
import type { Queue } from 'bullmq';
import type { UniqueQueue } from '../../adapters/bullmq/index.js';
import type { ConflictStrategy } from '../../src/index.js';
import { replacedIds } from '../replaced-ids.js';

export interface BurstOutcome {
  outcome: 'created' | 'deduplicated' | 'replaced' | 'updated' | 'rejected' | 'error';
  id?: string;
  existingJobId?: string;
  replacedIds?: string[];
  error?: string;
}

export async function burst(queues: UniqueQueue[], strategy: string, round: number, count: number): Promise<BurstOutcome[]> {
  const unique = { keys: ['type', 'args'], args_keys: ['user_id'], on_conflict: strategy as ConflictStrategy } as const;
  const adds = Array.from({ length: count }, async (_, i): Promise<BurstOutcome> => {
    try {
      const job = await queues[i % queues.length]!.add(`race-${strategy}-${round}`, { user_id: round, n: i }, { unique });
      return {
        outcome: job.unique!.outcome,
        id: job.id!,
        existingJobId: job.unique!.existingJobId,
        replacedIds: replacedIds(job.unique),
      };
    } catch (error) {
      const e = error as { code?: string; existingJobId?: string; message: string };
      return e.code === 'duplicate' ? { outcome: 'rejected', existingJobId: e.existingJobId } : { outcome: 'error', error: e.message };
    }
  });
  return Promise.all(adds);
}

/** BullMQ's sets and lists a live (not finished) job is in. */
export const LIVE_STATES = ['wait', 'prioritized', 'delayed', 'active', 'waiting-children'] as const;

/** The other process of a two-process race: told `<strategy> <round> <count>` on stdin, it answers one JSON line. */
export interface RaceProducer {
  stdin: { write(line: string): unknown };
  lines: AsyncIterator<string>;
}

/**
 * One round of a two-process race: half the adds here (over `local`), half in `producer`, all in
 * flight at once; then the round's live jobs, read by `observer`.
 */
export async function raceRound(
  producer: RaceProducer,
  local: UniqueQueue[],
  observer: Queue,
  strategy: string,
  round: number,
  adds: number,
): Promise<{ outcomes: BurstOutcome[]; live: string[] }> {
  const half = adds / 2;
  producer.stdin.write(`${strategy} ${round} ${half}\n`);
  const [mine, theirs] = await Promise.all([
    burst(local, strategy, round, half),
    producer.lines.next().then((line) => JSON.parse(line.value as string) as BurstOutcome[]),
  ]);
  const live = (await observer.getJobs([...LIVE_STATES])).filter((job) => job.name === `race-${strategy}-${round}`).map((job) => job.id!);
  return { outcomes: [...mine, ...theirs], live };
}
