import type { OjsJob } from '../src/index.js';

/**
 * The ids a `replace` superseded, oldest first: `replaced` then `also_replaced`, the one shape of
 * every backend's `EnqueueResult` and of BullMQ's `job.unique`. Empty for any other outcome.
 */
export function replacedIds(outcome: { replaced?: OjsJob | undefined; also_replaced?: OjsJob[] | undefined } | undefined): string[] {
  if (outcome?.replaced === undefined) return [];
  return [outcome.replaced, ...(outcome.also_replaced ?? [])].map((job) => job.id);
}
