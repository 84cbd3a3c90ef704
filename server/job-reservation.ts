/**
 * The reservation of a job an HTTP worker fetched (ojs-worker-protocol §5, ojs-timeouts §5.1):
 * until when the job stays the worker's without an ACK, FAIL or heartbeat, and what its lapse
 * means.
 *
 * - The visibility timeout: the fetch's or heartbeat's `visibility_timeout_ms`, else the job's
 *   own (`options.visibility_timeout_ms`), else 30 s, counted from the fetch or heartbeat.
 * - The execution timeout: a job pushed with `options.timeout_ms` must be done within that long of
 *   its start; a heartbeat never extends a reservation past it. There is no default: a job without
 *   `timeout_ms` is bounded by its visibility timeout alone (docs/design/gateway.md).
 *
 * The reservation is the earlier of the two. Every store fails back a lapsed one with the same
 * sweep (the next call of any gateway process over the backend): a visibility lapse goes back to
 * `available` at once (`attempt` counted, `max_attempts` respected: the last attempt is discarded),
 * an execution timeout is a failure under the job's retry policy (`retryable` or `discarded`), each
 * with its error (`visibility_timeout`, `timeout`).
 */
import type { JsonValue } from '../src/job.js';
import type { JobError } from './gateway-store.js';

export const DEFAULT_VISIBILITY_TIMEOUT_MS = 30_000;

/** Why a reservation lapses: no ACK, FAIL or heartbeat in time, or the job ran past `timeout_ms`. */
export type Lapse = 'visibility_timeout' | 'timeout';

export interface Reservation {
  /** When it lapses, in ms since the epoch (the store's clock). */
  untilMs: number;
  lapse: Lapse;
}

export const VISIBILITY_TIMEOUT_ERROR: JobError = {
  type: 'visibility_timeout',
  code: 'visibility_timeout',
  message: 'visibility timeout expired',
  retryable: true,
};

export const EXECUTION_TIMEOUT_ERROR: JobError = {
  type: 'timeout',
  code: 'timeout',
  message: 'the job ran past its execution timeout (timeout_ms)',
  retryable: true,
};

export function lapseError(lapse: Lapse): JobError {
  return lapse === 'timeout' ? EXECUTION_TIMEOUT_ERROR : VISIBILITY_TIMEOUT_ERROR;
}

/** The job's execution deadline (its start plus `timeout_ms`), or null without one. */
export function executionDeadline(envelope: Record<string, JsonValue>, startedAtMs: number): number | null {
  const timeout = envelope.timeout_ms;
  return typeof timeout === 'number' && timeout > 0 ? startedAtMs + timeout : null;
}

/** The visibility timeout of a fetch or heartbeat: `requestedMs`, else the job's own, else the default. */
export function visibilityMs(envelope: Record<string, JsonValue>, requestedMs: number | null): number {
  const own = envelope.visibility_timeout_ms;
  return requestedMs ?? (typeof own === 'number' && own > 0 ? own : DEFAULT_VISIBILITY_TIMEOUT_MS);
}

/**
 * The reservation from `nowMs` of a job started at `startedAtMs` (or whose deadline is
 * `deadlineMs`), for `requestedMs` (null: the job's own visibility timeout, else the default).
 */
export function reservationOf(
  envelope: Record<string, JsonValue>,
  deadlineMs: number | null,
  nowMs: number,
  requestedMs: number | null,
): Reservation {
  const visibleUntil = nowMs + visibilityMs(envelope, requestedMs);
  if (deadlineMs !== null && deadlineMs <= visibleUntil) return { untilMs: deadlineMs, lapse: 'timeout' };
  return { untilMs: visibleUntil, lapse: 'visibility_timeout' };
}
