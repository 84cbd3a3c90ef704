/**
 * What a PUSH asks beside its job, applied before the store enqueues it: times given relative to
 * now resolved on the store's clock (relative-time.ts), and the rate limit a job sets on its queue
 * (queue-rate-limit.ts), set first so that no fetch can hand the job out under an older limit.
 */
import type { GatewayStore } from './gateway-store.js';
import type { ParsedPush } from './ojs-request.js';
import { resolveRelativeTimes } from './relative-time.js';

export async function applyPushOptions(store: GatewayStore, parsed: readonly ParsedPush[]): Promise<void> {
  await resolveRelativeTimes(
    parsed.map((push) => push.input),
    parsed.map((push) => push.relative),
    () => store.now(),
  );
  // One write per queue: the last job of a batch that names a limit for it wins, as its PUSH would.
  const limits = new Map(parsed.filter((push) => push.rateLimit).map((push) => [push.input.queue ?? 'default', push.rateLimit!]));
  for (const [queue, limit] of limits) await store.setRateLimit(queue, limit);
}
