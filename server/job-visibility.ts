/**
 * How long a fetch reserves a job: the fetch's `visibility_timeout_ms` when it gave one, otherwise
 * the job's own `options.visibility_timeout_ms` (kept on its envelope), otherwise the binding's
 * default. A cron's jobs carry one (cron-firing.ts), as the reference servers give theirs.
 */
import type { FetchRequest, GatewayJob } from './gateway-store.js';

export function reservationMs(job: Pick<GatewayJob, 'envelope'>, request: FetchRequest): number {
  const own = job.envelope.visibility_timeout_ms;
  if (request.visibilityFromJob && typeof own === 'number' && Number.isInteger(own) && own > 0) return own;
  return request.visibilityTimeoutMs;
}
