/**
 * The delay before a failed job's next attempt, from its OJS retry policy (ojs-core §9):
 * `initial_interval * backoff_coefficient ^ (attempt - 1)`, capped at `max_interval`. Jitter is
 * not applied: the gateway's hosts schedule the retry at the time it computes.
 */
import type { RetryPolicy } from './gateway-store.js';

/** OJS's defaults: 1 s, doubling, at most 5 min. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = { initialIntervalMs: 1000, backoffCoefficient: 2, maxIntervalMs: 300_000 };

export function retryDelayMs(policy: RetryPolicy | undefined, attempt: number): number {
  const { initialIntervalMs, backoffCoefficient, maxIntervalMs } = policy ?? DEFAULT_RETRY_POLICY;
  return Math.min(maxIntervalMs, initialIntervalMs * backoffCoefficient ** Math.max(0, attempt - 1));
}
