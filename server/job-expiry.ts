/**
 * `expires_at` (ojs-core): a job still waiting when its deadline passes is discarded and never
 * run. The gateway keeps the deadline on the job's envelope and checks it at FETCH: a job a fetch
 * claims past its deadline is discarded (no `completed_at`, `discarded_at` the time it was found
 * expired) and the fetch goes on to the next job. The hosts' own workers do not read the field: a
 * job BullMQ's or Graphile's workers take is run whatever its deadline (docs/migration.md).
 */
import type { GatewayJob, JobError } from './gateway-store.js';

/** The error an expired job is discarded with. */
export const EXPIRED_ERROR: JobError = {
  type: 'expired',
  code: 'expired',
  message: 'the job expired (expires_at) before a worker fetched it',
  retryable: false,
};

/** Whether `job`'s `expires_at` is at or before `nowMs`. */
export function isExpired(job: GatewayJob, nowMs: number): boolean {
  const deadline = job.envelope.expires_at;
  return typeof deadline === 'string' && Date.parse(deadline) <= nowMs;
}
