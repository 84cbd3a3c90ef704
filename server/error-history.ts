/**
 * A job's error history (ojs-core §8.3: `error` is the latest failure, `errors` all of them): each
 * failure a worker reports (a NACK, a lapsed reservation) appended with the attempt it ended and
 * when. Kept in the job's gateway record on every backend, the most recent MAX_ERROR_HISTORY only.
 */
import type { JobError, JobErrorEntry } from './gateway-store.js';

/** A job may allow 32 767 attempts: its record keeps the last 50 failures. */
export const MAX_ERROR_HISTORY = 50;

/** `history` with `error` of attempt `attempt` appended, the oldest dropped past MAX_ERROR_HISTORY. */
export function withFailure(history: readonly JobErrorEntry[] | undefined, error: JobError, attempt: number, at: Date): JobErrorEntry[] {
  return [...(history ?? []), { ...error, attempt, occurred_at: at.toISOString() }].slice(-MAX_ERROR_HISTORY);
}
